package cmd

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
)

func newConfirmPruneCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "confirm-prune kustomization|helmrelease NAME",
		Short: "Let one render that the prune guard holds prune, and wait for the sync",
		Long: "confirm-prune confirms the render a Kustomization's or HelmRelease's prune guard holds\n" +
			"(Ready=False, PruneGuarded): it prints what the guard said would be pruned, sets the annotation\n" +
			"plumb.dev/confirm-prune to the digest of that render and requests a reconcile in the\n" +
			"same patch, then waits for it like reconcile. Only that render is confirmed: a later\n" +
			"one is guarded again. It refuses an object the guard does not hold, or whose\n" +
			"render changed since the guard held it. Exit code 1 when the sync ends with Ready=False.",
		Example:           "  plumb confirm-prune kustomization app -n team-a\n  plumb confirm-prune helmrelease podinfo -n team-a",
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: g.completeKindAndName([]*kind{kustomizationKind, helmReleaseKind}),
		RunE: g.onApplied(func(ctx context.Context, app *applied) error {
			digest, err := heldDigest(app)
			if err != nil {
				return err
			}
			ready := apimeta.FindStatusCondition(app.Conditions, meta.ReadyCondition)
			fmt.Fprintf(g.out, "◎ %s\n", oneLine(ready.Message))
			token, err := g.requestReconcile(ctx, app.Object, nil, map[string]string{kustomizev1.ConfirmPruneAnnotation: digest})
			if err != nil {
				return err
			}
			fmt.Fprintf(g.out, "► prune of render %s confirmed for %s\n", digest, ref(app.kind, app.Object))
			return g.waitHandled(ctx, app.kind, client.ObjectKeyFromObject(app.Object), token)
		}),
	}
}

// heldDigest is the digest of the render the prune guard holds on a
// Kustomization or HelmRelease: the current rendered artifact, when
// Ready=False PruneGuarded at the current generation names it (the guard's
// message carries the digest to confirm).
func heldDigest(app *applied) (string, error) {
	ready := apimeta.FindStatusCondition(app.Conditions, meta.ReadyCondition)
	if ready == nil || ready.Status != metav1.ConditionFalse || ready.Reason != kustomizev1.PruneGuardedReason {
		return "", fmt.Errorf("%s is not held by the prune guard (Ready=%s): nothing to confirm", ref(app.kind, app.Object), readyReason(ready))
	}
	a := app.Rendered
	if a == nil || a.Digest == "" || app.kind.status(app.Object).observedGeneration != app.Object.GetGeneration() ||
		!strings.Contains(ready.Message, kustomizev1.ConfirmPruneAnnotation+"="+a.Digest) {
		return "", fmt.Errorf("%s: the render changed since the prune guard held it; look at it again (plumb reconcile %s %s) before confirming",
			ref(app.kind, app.Object), app.kind.names[0], app.Object.GetName())
	}
	return a.Digest, nil
}

func readyReason(c *metav1.Condition) string {
	if c == nil {
		return "Unknown"
	}
	return string(c.Status) + ", " + c.Reason
}
