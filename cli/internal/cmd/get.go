package cmd

import (
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func newGetCmd(g *globals) *cobra.Command {
	var all bool
	c := &cobra.Command{
		Use:   "get sources|kustomizations|receivers|alerts|providers",
		Short: "List Plumb objects with their readiness and revision",
		Long: "get lists the objects of one Plumb kind in the namespace (or, with -A, in all\n" +
			"namespaces) as a table: NAME, READY, REVISION, AGE and the Ready condition's\n" +
			"MESSAGE. A suspended object's message starts with (suspended).",
		Example: "  plumb get kustomizations -A\n  plumb get sources -n team-a",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			k, err := kindNamed(args[0], kinds...)
			if err != nil {
				return err
			}
			if err := g.kube(); err != nil {
				return err
			}
			ctx, cancel := withTimeout(cmd, g)
			defer cancel()
			list := k.newList()
			var opts []client.ListOption
			if !all {
				opts = append(opts, client.InNamespace(g.ns))
			}
			if err := g.client.List(ctx, list, opts...); err != nil {
				return fmt.Errorf("listing %s: %w", k.plural, err)
			}
			items := k.items(list)
			if len(items) == 0 {
				if all {
					fmt.Fprintf(g.errOut, "No %s found.\n", k.plural)
				} else {
					fmt.Fprintf(g.errOut, "No %s found in namespace %s.\n", k.plural, g.ns)
				}
				return nil
			}
			sort.Slice(items, func(i, j int) bool {
				if items[i].GetNamespace() != items[j].GetNamespace() {
					return items[i].GetNamespace() < items[j].GetNamespace()
				}
				return items[i].GetName() < items[j].GetName()
			})
			printTable(g, k, items, all, time.Now())
			return nil
		},
	}
	c.Flags().BoolVarP(&all, "all-namespaces", "A", false, "List the objects of every namespace.")
	return c
}

// printTable writes the get table the way kubectl aligns its columns.
func printTable(g *globals, k *kind, items []client.Object, withNamespace bool, now time.Time) {
	w := tabwriter.NewWriter(g.out, 0, 8, 3, ' ', 0)
	header := []string{"NAME", "READY", "REVISION", "AGE", "MESSAGE"}
	if withNamespace {
		header = append([]string{"NAMESPACE"}, header...)
	}
	fmt.Fprintln(w, strings.Join(header, "\t"))
	for _, o := range items {
		s := k.status(o)
		ready, msg := readyOf(s)
		if s.suspended {
			msg = "(suspended) " + msg
		}
		rev := s.revision
		if rev == "" {
			rev = "-"
		}
		row := []string{o.GetName(), ready, rev, age(o.GetCreationTimestamp().Time, now), oneLine(msg)}
		if withNamespace {
			row = append([]string{o.GetNamespace()}, row...)
		}
		fmt.Fprintln(w, strings.Join(row, "\t"))
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
