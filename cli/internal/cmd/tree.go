package cmd

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/health"
)

func newTreeCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "tree kustomization|helmrelease NAME",
		Short: "Show the objects a Kustomization or HelmRelease manages, with the health of each",
		Long: "tree prints status.inventory as a tree with the health of every object as\n" +
			"pkg/health computes it (Healthy, Progressing, Degraded, Missing, …).\n" +
			"Kustomizations and HelmReleases in the inventory are expanded in turn.",
		Example: "  plumb tree kustomization apps -n team-a\n  plumb tree helmrelease podinfo -n team-a",
		Args:    cobra.ExactArgs(2),
		RunE: g.onApplied(func(ctx context.Context, t *applied) error {
			ready, msg := readyOf(t.kind.status(t.obj))
			fmt.Fprintf(g.out, "%s  Ready=%s %s\n", ref(t.kind, t.obj), ready, oneLine(msg))
			return g.printInventory(ctx, g.out, t, "", map[string]bool{ref(t.kind, t.obj): true})
		}),
	}
}

// printInventory prints one Kustomization's or HelmRelease's inventory
// under prefix, descending into the Kustomizations and HelmReleases it
// manages (seen stops a cycle).
func (g *globals) printInventory(ctx context.Context, w io.Writer, t *applied, prefix string, seen map[string]bool) error {
	if t.inventory == nil || len(t.inventory.Entries) == 0 {
		fmt.Fprintf(w, "%s└── (no objects applied yet)\n", prefix)
		return nil
	}
	drifts := driftByObject(t.drift)
	entries := t.inventory.Entries
	for i, e := range entries {
		branch, next := "├── ", "│   "
		if i == len(entries)-1 {
			branch, next = "└── ", "    "
		}
		obj, h, err := g.entryHealth(ctx, e)
		if err != nil {
			fmt.Fprintf(w, "%s%s%s  error: %v\n", prefix, branch, entryID(e), err)
			continue
		}
		line := fmt.Sprintf("%s%s%s  %s", prefix, branch, entryID(e), oneLine(h.String()))
		if d := drifts[entryID(e)]; d != nil && d.contested != nil {
			line += "  ⚔ " + contestedText(*d.contested)
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

// appliedKindOf is the kind of an inventory entry that is itself a
// Kustomization or a HelmRelease, nil for any other object.
func appliedKindOf(e kustomizev1.InventoryEntry) *kind {
	switch {
	case e.Group == kustomizev1.GroupVersion.Group && e.Kind == kustomizev1.KustomizationKind:
		return kustomizationKind
	case e.Group == helmv2.GroupVersion.Group && e.Kind == helmv2.HelmReleaseKind:
		return helmReleaseKind
	}
	return nil
}

// entryHealth reads an inventory entry's live object (nil when it is
// gone) and its health as pkg/health computes it.
func (g *globals) entryHealth(ctx context.Context, e kustomizev1.InventoryEntry) (*unstructured.Unstructured, health.Result, error) {
	obj, err := g.liveObject(ctx, e)
	if err != nil {
		return nil, health.Result{}, err
	}
	return obj, health.Evaluate(obj), nil
}

// liveObject reads an inventory entry's object; nil when it is gone.
func (g *globals) liveObject(ctx context.Context, e kustomizev1.InventoryEntry) (*unstructured.Unstructured, error) {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(schema.GroupVersionKind{Group: e.Group, Version: e.Version, Kind: e.Kind})
	err := g.client.Get(ctx, client.ObjectKey{Namespace: e.Namespace, Name: e.Name}, obj)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return obj, nil
}

// entryID renders Kind/namespace/name, or Kind/name when cluster-scoped.
func entryID(e kustomizev1.InventoryEntry) string {
	parts := []string{e.Kind}
	if e.Namespace != "" {
		parts = append(parts, e.Namespace)
	}
	return strings.Join(append(parts, e.Name), "/")
}
