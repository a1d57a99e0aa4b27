package cmd

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	"plumb.dev/pkg/request"
)

func newRollbackCmd(g *globals) *cobra.Command {
	var to int
	var followGit bool
	c := &cobra.Command{
		Use:   "rollback kustomization|helmrelease NAME [--to N]",
		Short: "Sync an earlier render from status.history again and hold it until resumed",
		Long: "rollback asks sync-controller to sync an earlier render of a Kustomization or HelmRelease again:\n" +
			"entry N of status.history (newest first: 0 is the one applied now, 1 the one before it).\n" +
			"It sets the annotation plumb.dev/rollback to that render's digest and requests a reconcile in\n" +
			"the same patch, then waits for it like reconcile. The object then holds that render: new\n" +
			"revisions are rendered but not applied, drift is corrected to the rolled-back state, and\n" +
			"RolledBack=True says so, until `plumb resume` ends the hold — or, with --follow-git, until the\n" +
			"next new render. Pruning follows the usual rules against the earlier render (the prune guard\n" +
			"applies). A HelmRelease's rollback is recorded in Helm's storage as `helm rollback` records it.\n" +
			"Exit code 1 when the sync ends with Ready=False.",
		Example:           "  plumb rollback kustomization app -n team-a\n  plumb rollback helmrelease podinfo --to 2\n  plumb rollback kustomization app --follow-git",
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: g.completeKindAndName([]*kind{kustomizationKind, helmReleaseKind}),
		RunE: g.onApplied(func(ctx context.Context, app *applied) error {
			entries := historyOf(app.Object)
			if to < 1 || to >= len(entries) {
				return fmt.Errorf("%s has %d entries in status.history: --to must be between 1 and %d", ref(app.kind, app.Object), len(entries), len(entries)-1)
			}
			target := entries[to]
			if target.digest == "" {
				return fmt.Errorf("%s: entry %d of status.history (revision %s) has no render of Plumb's to apply again (an adopted release)", ref(app.kind, app.Object), to, target.revision)
			}
			follow := ""
			if followGit {
				if app.Rendered == nil || app.Rendered.Digest == "" {
					return fmt.Errorf("%s has no render yet: nothing for --follow-git to follow", ref(app.kind, app.Object))
				}
				follow = app.Rendered.Digest
			}
			token, err := request.Rollback(ctx, g.client, app.Object, target.digest, follow)
			if err != nil {
				return err
			}
			until := "plumb resume " + app.kind.names[0] + " " + app.Object.GetName()
			if followGit {
				until = "the next new revision, or " + until
			}
			fmt.Fprintf(g.out, "► %s rolled back to revision %s (history entry %d); held until %s\n", ref(app.kind, app.Object), target.revision, to, until)
			return g.waitHandled(ctx, app.kind, client.ObjectKeyFromObject(app.Object), token)
		}),
	}
	c.Flags().IntVar(&to, "to", 1, "The entry of status.history to roll back to, newest first: 1 is the one before the applied one.")
	c.Flags().BoolVar(&followGit, "follow-git", false, "End the hold at the next new render (a new commit) instead of at plumb resume.")
	return c
}

// historyEntry is one entry of a Kustomization's or HelmRelease's
// status.history, as rollback picks it.
type historyEntry struct{ digest, revision string }

// historyOf lists obj's status.history, newest first.
func historyOf(obj client.Object) []historyEntry {
	var out []historyEntry
	switch o := obj.(type) {
	case *kustomizev1.Kustomization:
		for _, h := range o.Status.History {
			out = append(out, historyEntry{digest: h.Digest, revision: h.Metadata[meta.HistoryRevisionKey]})
		}
	case *helmv2.HelmRelease:
		for _, h := range o.Status.History {
			out = append(out, historyEntry{digest: h.Digest, revision: fmt.Sprintf("%s@%s (release v%d)", h.ChartName, h.ChartVersion, h.Version)})
		}
	}
	return out
}
