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

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/health"
)

func newTreeCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "tree kustomization NAME",
		Short: "Show the objects a Kustomization manages, with the health of each",
		Long: "tree prints status.inventory as a tree with the health of every object as\n" +
			"pkg/health computes it (Healthy, Progressing, Degraded, Missing, …).\n" +
			"Kustomizations in the inventory are expanded in turn.",
		Args: cobra.ExactArgs(2),
		RunE: g.onKustomization(func(ctx context.Context, ks *kustomizev1.Kustomization) error {
			ready, msg := readyOf(kustomizationKind.status(ks))
			fmt.Fprintf(g.out, "%s  Ready=%s %s\n", ref(kustomizationKind, ks), ready, oneLine(msg))
			return g.printInventory(ctx, g.out, ks, "", map[types.NamespacedName]bool{client.ObjectKeyFromObject(ks): true})
		}),
	}
}

// printInventory prints one Kustomization's inventory under prefix,
// descending into the Kustomizations it manages (seen stops a cycle).
func (g *globals) printInventory(ctx context.Context, w io.Writer, ks *kustomizev1.Kustomization, prefix string, seen map[types.NamespacedName]bool) error {
	if ks.Status.Inventory == nil || len(ks.Status.Inventory.Entries) == 0 {
		fmt.Fprintf(w, "%s└── (no objects applied yet)\n", prefix)
		return nil
	}
	drifts := driftByObject(ks)
	entries := ks.Status.Inventory.Entries
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
		if obj != nil && e.Group == kustomizev1.GroupVersion.Group && e.Kind == kustomizev1.KustomizationKind {
			key := types.NamespacedName{Namespace: e.Namespace, Name: e.Name}
			if seen[key] {
				continue
			}
			seen[key] = true
			child := &kustomizev1.Kustomization{}
			if err := g.client.Get(ctx, key, child); err != nil {
				continue
			}
			if err := g.printInventory(ctx, w, child, prefix+next, seen); err != nil {
				return err
			}
		}
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
