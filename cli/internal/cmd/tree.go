package cmd

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/types"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	"plumb.dev/pkg/inspect"
)

func newTreeCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "tree kustomization|helmrelease NAME",
		Short: "Show the objects a Kustomization or HelmRelease manages, with the health of each",
		Long: "tree prints status.inventory as a tree with the health of every object as\n" +
			"pkg/health computes it (Healthy, Progressing, Degraded, Missing, …), or\n" +
			"a Kustomization's spec.healthCheckExprs for the kinds they name.\n" +
			"Kustomizations and HelmReleases in the inventory are expanded in turn.",
		Example:           "  plumb tree kustomization apps -n team-a\n  plumb tree helmrelease podinfo -n team-a",
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: g.completeKindAndName([]*kind{kustomizationKind, helmReleaseKind}),
		RunE: g.onApplied(func(ctx context.Context, t *applied) error {
			ready, msg := readyOf(t.kind.status(t.Object))
			fmt.Fprintf(g.out, "%s  Ready=%s %s\n", ref(t.kind, t.Object), ready, oneLine(msg))
			return g.printInventory(ctx, g.out, t, "", map[string]bool{ref(t.kind, t.Object): true})
		}),
	}
}

// printInventory prints one Kustomization's or HelmRelease's inventory
// under prefix, descending into the Kustomizations and HelmReleases it
// manages (seen stops a cycle).
func (g *globals) printInventory(ctx context.Context, w io.Writer, t *applied, prefix string, seen map[string]bool) error {
	if t.Inventory == nil || len(t.Inventory.Entries) == 0 {
		fmt.Fprintf(w, "%s└── (no objects applied yet)\n", prefix)
		return nil
	}
	drifts := inspect.DriftByObject(t.Drift)
	entries := t.Inventory.Entries
	live := inspect.ReadLive(ctx, g.client, entries)
	for i, e := range entries {
		branch, next := "├── ", "│   "
		if i == len(entries)-1 {
			branch, next = "└── ", "    "
		}
		obj, err := live.Get(e)
		if err != nil {
			fmt.Fprintf(w, "%s%s%s  error: %v\n", prefix, branch, entryID(e), err)
			continue
		}
		line := fmt.Sprintf("%s%s%s  %s", prefix, branch, entryID(e), oneLine(t.Health(obj).String()))
		if d := drifts[entryID(e)]; d != nil && d.Contested != nil {
			line += "  ⚔ " + contestedText(*d.Contested)
		}
		fmt.Fprintln(w, line)
		k := appliedKindOf(e)
		if obj == nil || k == nil {
			continue
		}
		key := types.NamespacedName{Namespace: e.Namespace, Name: e.Name}
		child := k.newObj()
		if err := g.client.Get(ctx, key, child); err != nil {
			continue
		}
		if seen[ref(k, child)] {
			continue
		}
		seen[ref(k, child)] = true
		ct, _ := appliedOf(child)
		if err := g.printInventory(ctx, w, ct, prefix+next, seen); err != nil {
			return err
		}
	}
	return nil
}

// appliedKindOf is the kind of an inventory entry that itself applies
// objects (meta.Applier: a Kustomization, a HelmRelease), nil for any
// other object.
func appliedKindOf(e kustomizev1.InventoryEntry) *kind {
	k := kindOfRef(e.Kind)
	if k == nil || k.def.Group() != e.Group {
		return nil
	}
	if _, ok := k.newObj().(meta.Applier); !ok {
		return nil
	}
	return k
}

// entryID renders Kind/namespace/name, or Kind/name when cluster-scoped.
func entryID(e kustomizev1.InventoryEntry) string {
	parts := []string{e.Kind}
	if e.Namespace != "" {
		parts = append(parts, e.Namespace)
	}
	return strings.Join(append(parts, e.Name), "/")
}
