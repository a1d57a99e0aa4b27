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
		Long: "confirm-prune confirms the render a Kustomization's (or HelmRelease's) prune guard holds (Ready=False,\n" +
			"PruneGuarded): it prints what the guard said would be pruned, sets the annotation\n" +
			"plumb.dev/confirm-prune to the digest of that render and requests a reconcile in the\n" +
			"same patch, then waits for it like reconcile. Only that render is confirmed: a later\n" +
			"one is guarded again. It refuses a Kustomization the guard does not hold, or whose\n" +
			"render changed since the guard held it. Exit code 1 when the sync ends with Ready=False.",
		Example: "  plumb confirm-prune kustomization app -n team-a",
		Args:    cobra.ExactArgs(2),
		RunE: g.onApplied(func(ctx context.Context, t *applied) error {
			digest, err := heldDigest(t)
			if err != nil {
				return err
			}
			ready := apimeta.FindStatusCondition(t.conditions, meta.ReadyCondition)
			fmt.Fprintf(g.out, "◎ %s\n", oneLine(ready.Message))
			token, err := g.requestReconcile(ctx, t.obj, nil, map[string]string{kustomizev1.ConfirmPruneAnnotation: digest})
			if err != nil {
				return err
			}
			fmt.Fprintf(g.out, "► prune of render %s confirmed for %s\n", digest, ref(t.kind, t.obj))
			return g.waitHandled(ctx, t.kind, client.ObjectKeyFromObject(t.obj), token)
		}),
	}
}

// heldDigest is the digest of the render the prune guard holds: the
// current rendered artifact, when Ready=False PruneGuarded at the current
// generation names it (the guard's message carries the digest to confirm).
func heldDigest(t *applied) (string, error) {
	ready := apimeta.FindStatusCondition(t.conditions, meta.ReadyCondition)
	if ready == nil || ready.Status != metav1.ConditionFalse || ready.Reason != kustomizev1.PruneGuardedReason {
		return "", fmt.Errorf("%s is not held by the prune guard (Ready=%s): nothing to confirm", ref(t.kind, t.obj), readyReason(ready))
	}
	a := t.rendered
	if a == nil || a.Digest == "" || t.kind.status(t.obj).observedGeneration != t.obj.GetGeneration() ||
		!strings.Contains(ready.Message, kustomizev1.ConfirmPruneAnnotation+"="+a.Digest) {
		return "", fmt.Errorf("%s: the render changed since the prune guard held it; look at it again (plumb reconcile %s %s) before confirming",
			ref(t.kind, t.obj), t.kind.names[0], t.obj.GetName())
	}
	return a.Digest, nil
}

func readyReason(c *metav1.Condition) string {
	if c == nil {
		return "Unknown"
	}
	return string(c.Status) + ", " + c.Reason
}
