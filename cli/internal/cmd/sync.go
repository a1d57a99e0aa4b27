package cmd

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
)

func newSyncCmd(g *globals) *cobra.Command {
	var only []string
	c := &cobra.Command{
		Use:   "sync kustomization|helmrelease NAME [--only Kind/namespace/name ...]",
		Short: "Apply the render that a Kustomization or HelmRelease with syncPolicy Manual holds, and wait for the sync",
		Long: "sync asks sync-controller to apply the current render of a Kustomization or HelmRelease\n" +
			"whose spec.syncPolicy is Manual: it sets the annotation plumb.dev/sync to a new token\n" +
			"(with plumb.dev/sync-only for --only) and requests a reconcile in the same patch, then\n" +
			"waits for it like reconcile. With --only, a selective sync applies only the named objects\n" +
			"of the render (Kind/namespace/name, Kind/name for a cluster-scoped one), without hooks,\n" +
			"and prunes nothing; what still differs is printed. An object with syncPolicy Automatic\n" +
			"syncs on its own: sync refuses it (use reconcile). Exit code 1 when the sync ends with\n" +
			"Ready=False.",
		Example: "  plumb sync kustomization app -n team-a\n" +
			"  plumb sync kustomization app --only Deployment/team-a/web --only ConfigMap/team-a/web-config\n" +
			"  plumb sync helmrelease podinfo -n team-a",
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: g.completeKindAndName([]*kind{kustomizationKind, helmReleaseKind}),
		RunE: g.onApplied(func(ctx context.Context, app *applied) error {
			if app.SyncPolicy != kustomizev1.SyncPolicyManual {
				return fmt.Errorf("%s has syncPolicy %s and syncs on its own: plumb reconcile %s %s",
					ref(app.kind, app.Object), app.SyncPolicy, app.kind.names[0], app.Object.GetName())
			}
			if err := checkSyncOnly(only); err != nil {
				return err
			}
			if o := app.ManualSync.OutOfSync; o != nil {
				fmt.Fprintf(g.out, "◎ %s\n", outOfSyncLine(o))
			}
			annotations := map[string]string{
				kustomizev1.SyncRequestAnnotation: time.Now().UTC().Format(time.RFC3339Nano),
			}
			// A merge patch removes an annotation set to null; an empty
			// value reads as "everything" too.
			annotations[kustomizev1.SyncOnlyAnnotation] = strings.Join(only, ",")
			token, err := g.requestReconcile(ctx, app.Object, nil, annotations)
			if err != nil {
				return err
			}
			what := "sync"
			if len(only) > 0 {
				what = "selective sync of " + strings.Join(only, ", ")
			}
			fmt.Fprintf(g.out, "► %s of %s requested\n", what, ref(app.kind, app.Object))
			key := client.ObjectKeyFromObject(app.Object)
			if err := g.waitHandled(ctx, app.kind, key, token); err != nil {
				return err
			}
			after := app.kind.newObj()
			if err := g.client.Get(ctx, key, after); err != nil {
				return notFound(err, app.kind, key)
			}
			if a, ok := appliedOf(after); ok && a.ManualSync.OutOfSync != nil {
				fmt.Fprintf(g.out, "◎ still out of sync: %s\n", outOfSyncLine(a.ManualSync.OutOfSync))
			}
			return nil
		}),
	}
	c.Flags().StringArrayVar(&only, "only", nil, "Apply only this object of the render, as Kind/namespace/name (Kind/name when cluster-scoped); repeatable.")
	return c
}

// checkSyncOnly refuses an --only that cannot name an object: the
// annotation is a comma-separated list of Kind/namespace/name.
func checkSyncOnly(only []string) error {
	for _, ref := range only {
		parts := strings.Split(ref, "/")
		if strings.Contains(ref, ",") || len(parts) < 2 || len(parts) > 3 || slices.Contains(parts, "") {
			return fmt.Errorf("--only %q: want Kind/namespace/name, or Kind/name for a cluster-scoped object", ref)
		}
	}
	return nil
}

// outOfSyncLine words status.outOfSync on one line.
func outOfSyncLine(o *kustomizev1.OutOfSyncStatus) string {
	part := func(verb string, n int, names []string) string {
		if n == 0 {
			return "0 to " + verb
		}
		return fmt.Sprintf("%d to %s (%s)", n, verb, strings.Join(names, ", "))
	}
	return fmt.Sprintf("revision %s: %s, %s, %s", o.Revision,
		part("create", o.Creates, o.Create), part("change", o.Changes, o.Change), part("prune", o.Prunes, o.Prune))
}
