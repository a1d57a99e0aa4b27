package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	"plumb.dev/pkg/diff"
	"plumb.dev/pkg/inspect"
	"plumb.dev/pkg/inventory"
	"plumb.dev/pkg/manage"
	"plumb.dev/pkg/object"
)

func newDiffCmd(g *globals) *cobra.Command {
	var local localRender
	ctrlNS := controllerNamespace
	c := &cobra.Command{
		Use:   "diff kustomization|helmrelease NAME [--path DIR]",
		Short: "Show, field by field, where the cluster differs from the rendered manifests, or from a local checkout",
		Long: "diff downloads the Kustomization's or HelmRelease's rendered artifact\n" +
			"(status.renderedArtifact), verifies its digest, asks the API server for a\n" +
			"server-side dry-run apply of every object as sync-controller would make it (field\n" +
			"manager plumb-sync), and compares the result with the live object, leaving out\n" +
			"the fields spec.ignore (a HelmRelease's driftDetection.ignore) names. Values are\n" +
			"shown as live → Git (→ the chart); Secret values are redacted, and so is every\n" +
			"field that holds a value from a postBuild.substituteFrom Secret or, for a\n" +
			"HelmRelease, a valuesFrom Secret. Helm hooks are not compared.\n\n" +
			"With --path (a Kustomization only) it compares a local checkout instead: rendered as `plumb build`\n" +
			"renders it (render-controller's renderer, sandbox and limits, the spec and the\n" +
			"postBuild variables from the cluster), it shows what a sync of that checkout\n" +
			"would change: the changed fields, the objects it would create, and those of the\n" +
			"inventory it would prune. This is the check to run on a pull request.\n\n" +
			"The rendered artifact is downloaded only from render-controller: its Service in\n" +
			"--controller-namespace through the API server's service proxy (an artifact URL\n" +
			"render-controller.<namespace>.svc…), or a render-controller on this machine (a\n" +
			"loopback address). Any other URL in the status is refused.\n\n" +
			"Exit code: 0 no drift (no change), 1 drift (changes), 2 error (a checkout that\n" +
			"does not render included).",
		Example:           "  plumb diff kustomization apps -n team-a\n  plumb diff kustomization apps -n team-a --path .\n  plumb diff helmrelease podinfo -n team-a",
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: g.completeKindAndName([]*kind{kustomizationKind, helmReleaseKind}),
		RunE: g.onApplied(func(ctx context.Context, a *applied) error {
			ks, isKs := a.Object.(*kustomizev1.Kustomization)
			switch {
			case local.path != "" && !isKs:
				return fmt.Errorf("--path compares a checkout with a Kustomization; a %s renders a chart", a.kind.Kind)
			case local.path != "":
				return g.diffLocal(ctx, ks, local)
			}
			return g.diff(ctx, a, ctrlNS)
		}),
	}
	local.bindFlags(c.Flags())
	c.Flags().StringVar(&ctrlNS, "controller-namespace", controllerNamespace, "Where render-controller's Service is, the only server rendered artifacts are downloaded from.")
	return c
}

// diff compares a Kustomization's or HelmRelease's rendered artifact with
// the cluster: the same path for both kinds, which differ only in what
// applied says of them (labels, hooks, ignore rules, prune).
func (g *globals) diff(ctx context.Context, t *applied, ctrlNS string) error {
	a := t.Rendered
	if a == nil {
		return fmt.Errorf("%s has no rendered artifact yet (render-controller has not rendered it)", ref(t.kind, t.Object))
	}
	ig, err := diff.NewIgnorer(t.Ignore)
	if err != nil {
		return fmt.Errorf("%s: %w", t.IgnoreField(), err)
	}
	objs, err := g.fetchRendered(ctx, a, ctrlNS)
	if err != nil {
		return err
	}
	to := "Git"
	if t.kind == helmReleaseKind {
		to = "the chart"
		fmt.Fprintf(g.out, "Comparing %s with chart version %s (%s) (live → chart)\n", ref(t.kind, t.Object), a.Revision, a.Digest)
	} else {
		fmt.Fprintf(g.out, "Comparing %s with revision %s (live → Git)\n", ref(t.kind, t.Object), a.Revision)
	}
	var contested []kustomizev1.ContestedDrift
	if t.Drift != nil {
		contested = t.Drift.Contested
	}
	results, hooks := g.compareAll(ctx, t, objs, ig)
	g.redact(ctx, t, results)
	return report(g.out, results, hooks, contested, to)
}

// fetchRendered downloads a rendered artifact from render-controller's
// Service in ctrlNS, or from a render-controller on this machine: the
// user's own process may reach loopback addresses anyway, and the
// download carries no credentials there.
func (g *globals) fetchRendered(ctx context.Context, a *meta.Artifact, ctrlNS string) ([]*unstructured.Unstructured, error) {
	from := inspect.RenderControllerIn(ctrlNS)
	from.Loopback = true
	f, err := inspect.NewArtifactFetcher(g.cfg, from, inspect.ArtifactFetcherOptions{})
	if err != nil {
		return nil, err
	}
	objs, err := inspect.FetchRendered(ctx, f, a)
	if errors.Is(err, inspect.ErrArtifactRefused) {
		return nil, fmt.Errorf("%w: %s (render-controller serves http://render-controller.%s.svc.cluster.local./<kind>/<namespace>/<name>/<digest>.yaml; --controller-namespace names its namespace)", err, a.URL, ctrlNS)
	}
	return objs, err
}

// diffLocal compares the render of a local checkout with the cluster: what
// a sync of it would change. The values substituted from Secrets are
// known, so exactly those are redacted.
func (g *globals) diffLocal(ctx context.Context, ks *kustomizev1.Kustomization, o localRender) error {
	ig, err := diff.NewIgnorer(ks.Spec.Ignore)
	if err != nil {
		return fmt.Errorf("spec.ignore: %w", err)
	}
	res, vars, err := g.renderLocal(ctx, ks, o)
	if err != nil {
		return err
	}
	objs, err := object.DecodeManifests(res.Manifests)
	if err != nil {
		return err
	}
	var secrets []string
	for _, v := range vars {
		if v.Secret {
			secrets = append(secrets, v.Value)
		}
	}
	fmt.Fprintf(g.out, "Comparing %s with the checkout %s (live → checkout)\n", ref(kustomizationKind, ks), o.path)
	results, hooks := g.compareAll(ctx, appliedKustomization(ks), objs, ig)
	redactor := diff.NewRedactor(secrets)
	for i, r := range results {
		results[i].Changes = redactor.Changes(withoutAppliedHash(r.Changes))
		if r.Action == diff.Configured && len(results[i].Changes) == 0 {
			results[i].Action = diff.Unchanged
		}
	}
	// Fights (status.drift.contested) are about the cluster, not the
	// checkout: `plumb diff` without --path reports them.
	return report(g.out, results, hooks, nil, "Git")
}

// appliedHashPath is the field of manage.AppliedHashAnnotation in a change.
var appliedHashPath = `metadata.annotations["` + manage.AppliedHashAnnotation + `"]`

// withoutAppliedHash drops the change of the applied-hash annotation, which
// changes with any other field of a new render: bookkeeping, not content.
func withoutAppliedHash(changes []diff.Change) []diff.Change {
	out := changes[:0:0]
	for _, c := range changes {
		if c.Path != appliedHashPath {
			out = append(out, c)
		}
	}
	return out
}

// compareAll compares the rendered objects with the cluster (nothing is
// redacted yet) and counts the hooks it skipped.
func (g *globals) compareAll(ctx context.Context, t *applied, objs []*unstructured.Unstructured, ig *diff.Ignorer) ([]inspect.ObjectDiff, int) {
	var results []inspect.ObjectDiff
	desired := make([]*unstructured.Unstructured, 0, len(objs))
	hooks := 0
	newKinds := crdKinds(objs)
	for _, obj := range objs {
		if t.IsHook(obj) {
			hooks++ // hooks run during a sync (or never); they are not kept in step
			continue
		}
		if obj.GetName() == "" {
			results = append(results, inspect.ObjectDiff{ID: object.IDOf(obj), Err: errors.New("metadata.name is required (generateName is for hooks only)")})
			continue
		}
		if err := t.Prepare(g.client, obj); err != nil {
			// A custom resource whose CRD is in the same set: a sync
			// creates the CRD first, then it.
			if scope, ok := newKinds[obj.GroupVersionKind().GroupKind()]; ok && apimeta.IsNoMatchError(err) {
				if scope == "Namespaced" && obj.GetNamespace() == "" {
					obj.SetNamespace(t.Namespace)
				}
				desired = append(desired, obj)
				results = append(results, inspect.ObjectDiff{ID: object.IDOf(obj), Action: diff.Created, Note: "its CRD is not installed yet; a sync creates both"})
				continue
			}
			results = append(results, inspect.ObjectDiff{ID: object.IDOf(obj), Err: err})
			continue
		}
		desired = append(desired, obj)
		results = append(results, inspect.Compare(ctx, g.client, obj, ig))
	}
	results = append(results, g.pruneCandidates(ctx, t, desired)...)
	return results, hooks
}

// contestedText describes a fight sync-controller reports in
// status.drift.contested: the fields, the competing field manager, the
// controller behind it when known, and the reverts so far.
func contestedText(c kustomizev1.ContestedDrift) string {
	text := fmt.Sprintf("%s contested by field manager %s", strings.Join(c.Fields, ", "), c.Manager)
	if c.Controller != "" {
		text += " (" + c.Controller + ")"
	}
	return fmt.Sprintf("%s, %d revert(s), corrections backing off", text, c.Reverts)
}

// redact hides, as sync-controller's drift reports do, the values that
// postBuild.substituteFrom took from Secrets (drift.SecretRedactor). A
// Secret this user cannot read hides every value, with a warning.
func (g *globals) redact(ctx context.Context, t *applied, results []inspect.ObjectDiff) {
	changed := false
	for _, r := range results {
		changed = changed || len(r.Changes) > 0
	}
	if !changed {
		return
	}
	redactor, err := t.SecretRedactor(ctx, g.client)
	if err != nil {
		fmt.Fprintf(g.errOut, "warning: %v; every changed value is shown as %s\n", err, diff.Redacted)
	}
	for i := range results {
		results[i].Changes = redactor.Changes(results[i].Changes)
	}
}

// pruneCandidates lists the inventory's objects that the rendered set no
// longer holds: a sync with spec.prune deletes them.
func (g *globals) pruneCandidates(ctx context.Context, t *applied, desired []*unstructured.Unstructured) []inspect.ObjectDiff {
	var out []inspect.ObjectDiff
	for _, gone := range inventory.Removed(t.Inventory, desired) {
		id := object.IDOf(gone)
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(gone.GroupVersionKind())
		err := g.client.Get(ctx, client.ObjectKeyFromObject(gone), live)
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			out = append(out, inspect.ObjectDiff{ID: id, Err: fmt.Errorf("reading the live object: %w", err)})
		default:
			if why := t.KeptFromPrune(live); why != "" {
				out = append(out, inspect.ObjectDiff{ID: id, Note: "no longer in " + t.Origin + "; " + why})
			} else {
				out = append(out, inspect.ObjectDiff{ID: id, Action: diff.Deleted, Note: "no longer in " + t.Origin + "; a sync prunes it"})
			}
		}
	}
	return out
}

// report prints the results and the fights sync-controller reports, and
// returns the command's outcome: a fight counts as drift.
// to names the desired side in the summary: Git, the chart or the
// checkout.
func report(w io.Writer, results []inspect.ObjectDiff, hooks int, contested []kustomizev1.ContestedDrift, to string) error {
	counts := map[diff.Action]int{}
	var errs []error
	for _, r := range results {
		switch {
		case r.Err != nil:
			fmt.Fprintf(w, "! %s: %v\n", r.ID, r.Err)
			errs = append(errs, fmt.Errorf("%s: %w", r.ID, r.Err))
		case r.Action == diff.Created:
			fmt.Fprintf(w, "+ %s (%s)\n", r.ID, r.Note)
		case r.Action == diff.Deleted:
			fmt.Fprintf(w, "- %s (%s)\n", r.ID, r.Note)
		case r.Action == diff.Configured:
			fmt.Fprintf(w, "~ %s\n", r.ID)
			for _, c := range r.Changes {
				fmt.Fprintf(w, "    %s: %s → %s\n", c.Path, value(c.Before), value(c.After))
			}
		case r.Note != "":
			fmt.Fprintf(w, "  %s (%s)\n", r.ID, r.Note)
		}
		if r.Err == nil {
			counts[r.Action]++
		}
	}
	if hooks > 0 {
		fmt.Fprintf(w, "(%d hook objects not compared: they run during a sync)\n", hooks)
	}
	for _, c := range contested {
		fmt.Fprintf(w, "⚔ %s: %s (see the DriftContested condition)\n", c.Object, contestedText(c))
	}
	drifted := counts[diff.Configured] + counts[diff.Created] + counts[diff.Deleted] + len(contested)
	if len(errs) > 0 {
		return fmt.Errorf("%d objects could not be compared: %w", len(errs), errors.Join(errs...))
	}
	if drifted == 0 {
		fmt.Fprintf(w, "✔ no drift: %d objects match %s\n", counts[diff.Unchanged], to)
		return nil
	}
	fmt.Fprintf(w, "%d changed, %d to create, %d to prune, %d unchanged",
		counts[diff.Configured], counts[diff.Created], counts[diff.Deleted], counts[diff.Unchanged])
	if len(contested) > 0 {
		fmt.Fprintf(w, ", %d contested", len(contested))
	}
	fmt.Fprintln(w)
	return negative(nil)
}

// value renders one side of a change; an empty side is an absent field.
func value(v string) string {
	if v == "" {
		return "(absent)"
	}
	return v
}

// crdKinds returns the group and kind each CustomResourceDefinition of objs
// defines, with its scope.
func crdKinds(objs []*unstructured.Unstructured) map[schema.GroupKind]string {
	out := map[schema.GroupKind]string{}
	for _, o := range objs {
		if o.GroupVersionKind().GroupKind() != (schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}) {
			continue
		}
		group, _, _ := unstructured.NestedString(o.Object, "spec", "group")
		kind, _, _ := unstructured.NestedString(o.Object, "spec", "names", "kind")
		scope, _, _ := unstructured.NestedString(o.Object, "spec", "scope")
		if group != "" && kind != "" {
			out[schema.GroupKind{Group: group, Kind: kind}] = scope
		}
	}
	return out
}
