package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
)

func newConfirmDeleteCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "confirm-delete kustomization|helmrelease NAME",
		Short: "Let the deletion of a Kustomization or HelmRelease delete the objects that ask for a confirmation, and wait until it is gone",
		Long: "confirm-delete confirms a deletion that waits for a person (Ready=False, DeletionConfirmationRequired):\n" +
			"objects annotated plumb.dev/prune: confirm, or Argo CD's sync option Delete=confirm, hold the\n" +
			"deletion of their Kustomization or HelmRelease, deleting nothing, until it is confirmed. It prints\n" +
			"the objects, sets the annotation plumb.dev/confirm-delete to the current time (a time before the\n" +
			"deletion confirms nothing), and waits until the object is gone. It refuses an object that is not\n" +
			"being deleted or not waiting for a confirmation.",
		Example:           "  plumb confirm-delete kustomization app -n team-a",
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: g.completeKindAndName([]*kind{kustomizationKind, helmReleaseKind}),
		RunE: g.onApplied(func(ctx context.Context, app *applied) error {
			ready := apimeta.FindStatusCondition(app.Conditions, meta.ReadyCondition)
			if app.Object.GetDeletionTimestamp() == nil || ready == nil || ready.Reason != kustomizev1.DeletionConfirmationRequiredReason {
				return fmt.Errorf("%s is not a deletion waiting for a confirmation (Ready=%s): nothing to confirm",
					ref(app.kind, app.Object), readyReason(ready))
			}
			fmt.Fprintf(g.out, "◎ %s\n", oneLine(ready.Message))
			now := time.Now().UTC().Format(time.RFC3339)
			patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
				"annotations": map[string]string{kustomizev1.ConfirmDeleteAnnotation: now},
			}})
			if err != nil {
				return err
			}
			if err := g.client.Patch(ctx, app.Object, client.RawPatch(types.MergePatchType, patch)); err != nil {
				return fmt.Errorf("confirming the deletion of %s: %w", ref(app.kind, app.Object), err)
			}
			fmt.Fprintf(g.out, "► deletion of %s confirmed at %s\n", ref(app.kind, app.Object), now)
			return g.waitGone(ctx, app.kind, app.Object)
		}),
	}
}

// awaitsConfirmation says, of an object being deleted, that its deletion
// waits for plumb confirm-delete: Ready says so and nobody confirmed yet.
func awaitsConfirmation(obj client.Object) (string, bool) {
	a, ok := appliedOf(obj)
	if !ok || obj.GetDeletionTimestamp() == nil {
		return "", false
	}
	if _, confirmed := obj.GetAnnotations()[kustomizev1.ConfirmDeleteAnnotation]; confirmed {
		return "", false
	}
	ready := apimeta.FindStatusCondition(a.Conditions, meta.ReadyCondition)
	if ready == nil || ready.Reason != kustomizev1.DeletionConfirmationRequiredReason {
		return "", false
	}
	return ready.Message, true
}
