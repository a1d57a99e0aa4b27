package cmd

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
)

func newGetCmd(g *globals) *cobra.Command {
	var (
		all      bool
		watch    bool
		selector string
	)
	c := &cobra.Command{
		Use:   "get all|sources [git|helm|chart|oci|all]|kustomizations|helmreleases|receivers|alerts|alert-providers|images [repository|policy|update|all] [NAME]",
		Short: "List Plumb objects with their readiness and revision, or show one Kustomization or HelmRelease in detail",
		Long: "get lists the objects of one Plumb kind in the namespace (or, with -A, in all\n" +
			"namespaces) as a table: NAME, READY, REVISION, AGE and the Ready condition's\n" +
			"MESSAGE. A suspended object's message starts with (suspended). The image kinds\n" +
			"have Flux's columns: an ImageRepository's LAST SCAN, TAGS and SUSPENDED, an\n" +
			"ImagePolicy's IMAGE and TAG, an ImageUpdateAutomation's LAST RUN, LAST PUSH\n" +
			"COMMIT and SUSPENDED.\n\n" +
			"Kinds are spelled as Flux spells them (sources git, sources helm, sources chart,\n" +
			"sources all, kustomizations, helmreleases, receivers, alerts, alert-providers,\n" +
			"images repository, images policy, images update, images all) or\n" +
			"by plumb's names (gitrepositories, helmrepositories, helmcharts, ks, hr,\n" +
			"providers). `get all` lists every Plumb kind, one table per kind.\n\n" +
			"With a NAME, a Kustomization or a HelmRelease is shown in detail, like `argocd\n" +
			"app get`: source (chart) and revisions, sync status, health, the last sync, a\n" +
			"HelmRelease's release history, the conditions and every object it manages with\n" +
			"its health and drift. Another kind's NAME shows its row.",
		Example:           "  plumb get kustomizations -A\n  plumb get sources git -n team-a\n  plumb get sources helm\n  plumb get helmreleases -A\n  plumb get all\n  plumb get kustomization podinfo -n team-a\n  plumb get hr podinfo -n team-a\n  plumb get images all -A\n  plumb get image policy podinfo",
		Args:              cobra.RangeArgs(1, 3),
		ValidArgsFunction: g.completeKindAndName(allKinds, "all"),
		RunE: func(cmd *cobra.Command, args []string) error {
			sel, err := parseStatusSelector(selector)
			if err != nil {
				return err
			}
			if strings.EqualFold(args[0], "all") {
				if len(args) > 1 {
					return fmt.Errorf("get all takes no NAME")
				}
				if watch {
					return fmt.Errorf("--watch follows one kind, not all")
				}
				return g.run(cmd, func(ctx context.Context) error { return g.getAll(ctx, all, sel) })
			}
			ks, rest, err := kindArgs(args, false, allKinds...)
			if err != nil {
				return err
			}
			if len(rest) > 1 {
				return fmt.Errorf("want at most one NAME after the kind, got %d arguments", len(rest))
			}
			if watch {
				if len(ks) != 1 {
					return fmt.Errorf("--watch follows one kind, not all")
				}
				return g.watchTable(cmd, ks[0], rest, all, sel)
			}
			if len(rest) == 1 {
				if len(ks) != 1 {
					return fmt.Errorf("a NAME needs one kind, not all")
				}
				if all {
					return fmt.Errorf("a NAME is read in one namespace: use -n, not -A")
				}
				if sel != nil {
					return fmt.Errorf("--status-selector filters a list: give no NAME")
				}
				return g.run(cmd, func(ctx context.Context) error { return g.getOne(ctx, ks[0], rest[0]) })
			}
			return g.run(cmd, func(ctx context.Context) error {
				printed := 0
				for _, k := range ks {
					items, err := g.list(ctx, k, all)
					if err != nil {
						return err
					}
					items = sel.filter(k, items)
					if len(items) == 0 {
						g.noneFound(k.plural+sel.suffix(), all)
						continue
					}
					if printed > 0 {
						fmt.Fprintln(g.out)
					}
					prefix := ""
					if len(ks) > 1 {
						// sources all, images all: one table per kind, each
						// NAME prefixed with its kind as in get all.
						prefix = strings.ToLower(k.Kind) + "/"
					}
					printTable(g, k, items, all, prefix, time.Now())
					printed++
				}
				return nil
			})
		},
	}
	f := c.Flags()
	f.BoolVarP(&all, "all-namespaces", "A", false, "List the objects of every namespace.")
	f.BoolVarP(&watch, "watch", "w", false, "After the table, print a row for each change, until interrupted (or --timeout, when given).")
	f.StringVar(&selector, "status-selector", "", "List only the objects whose condition has a status: TYPE=STATUS or TYPE!=STATUS, e.g. ready=false.")
	return c
}

// run connects and runs f within --timeout.
func (g *globals) run(cmd *cobra.Command, f func(ctx context.Context) error) error {
	if err := g.kube(); err != nil {
		return err
	}
	ctx, cancel := withTimeout(cmd, g)
	defer cancel()
	return f(ctx)
}

// list returns the objects of one kind in the namespace, or in every
// namespace, sorted by namespace and name.
func (g *globals) list(ctx context.Context, k *kind, allNamespaces bool) ([]client.Object, error) {
	list := k.newList()
	var opts []client.ListOption
	if !allNamespaces {
		opts = append(opts, client.InNamespace(g.ns))
	}
	if err := g.client.List(ctx, list, opts...); err != nil {
		return nil, fmt.Errorf("listing %s: %w", k.plural, err)
	}
	items := listItems(list)
	sort.Slice(items, func(i, j int) bool {
		if items[i].GetNamespace() != items[j].GetNamespace() {
			return items[i].GetNamespace() < items[j].GetNamespace()
		}
		return items[i].GetName() < items[j].GetName()
	})
	return items, nil
}

// noneFound tells stderr that a list came back empty.
func (g *globals) noneFound(what string, allNamespaces bool) {
	if allNamespaces {
		fmt.Fprintf(g.errOut, "No %s found.\n", what)
	} else {
		fmt.Fprintf(g.errOut, "No %s found in namespace %s.\n", what, g.ns)
	}
}

// getAll prints one table per Plumb kind that has objects, each NAME
// prefixed with its kind as Flux's `get all` does (gitrepository/app).
func (g *globals) getAll(ctx context.Context, allNamespaces bool, sel *statusSelector) error {
	printed := 0
	for _, k := range allKinds {
		items, err := g.list(ctx, k, allNamespaces)
		if err != nil {
			return err
		}
		items = sel.filter(k, items)
		if len(items) == 0 {
			continue
		}
		if printed > 0 {
			fmt.Fprintln(g.out)
		}
		printTable(g, k, items, allNamespaces, strings.ToLower(k.Kind)+"/", time.Now())
		printed++
	}
	if printed == 0 {
		g.noneFound("Plumb objects"+sel.suffix(), allNamespaces)
	}
	return nil
}

// getOne shows one object: a Kustomization in detail, another kind as its
// table row.
func (g *globals) getOne(ctx context.Context, k *kind, name string) error {
	key := types.NamespacedName{Namespace: g.ns, Name: name}
	obj := k.newObj()
	if err := g.client.Get(ctx, key, obj); err != nil {
		return notFound(err, k, key)
	}
	switch o := obj.(type) {
	case *kustomizev1.Kustomization:
		return g.describeKustomization(ctx, o, time.Now())
	case *helmv2.HelmRelease:
		return g.describeHelmRelease(ctx, o, time.Now())
	}
	printTable(g, k, []client.Object{obj}, false, "", time.Now())
	return nil
}

// printTable writes the get table the way kubectl aligns its columns,
// each NAME after prefix.
func printTable(g *globals, k *kind, items []client.Object, withNamespace bool, prefix string, now time.Time) {
	w := tabwriter.NewWriter(g.out, 0, 8, 3, ' ', 0)
	fmt.Fprintln(w, strings.Join(tableHeader(k, withNamespace), "\t"))
	for _, o := range items {
		fmt.Fprintln(w, strings.Join(tableRow(k, o, withNamespace, prefix, now), "\t"))
	}
	_ = w.Flush()
}

// age renders how old something is the way kubectl does (5m, 3h2m, 12d).
func age(t, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t))
}

// oneLine keeps a multi-line message on its table row.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
