package cmd

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/diff"
	"plumb.dev/pkg/drift"
	"plumb.dev/pkg/manage"
	"plumb.dev/pkg/plan"
)

// driftDisabledTxt is what diff says of an object whose HelmRelease turned
// drift detection off.
const driftDisabledTxt = "driftDetection disabled"

// applied is an object sync-controller keeps in step with a render — a
// Kustomization or a HelmRelease — as diff, tree and get NAME read it: one
// view over the two kinds, whose statuses hold the same inventory, drift
// and sync types.
type applied struct {
	obj  client.Object
	kind *kind

	inventory  *kustomizev1.Inventory
	drift      *kustomizev1.DriftStatus
	rendered   *meta.Artifact
	sync       *kustomizev1.SyncProgress
	conditions []metav1.Condition

	lastApplied, lastAttempted string
	// renderApplied says whether the newest render has been applied: for a
	// Kustomization its revision is the last applied one, for a HelmRelease
	// its digest is the newest deployed release's (a values change keeps
	// the chart version).
	renderApplied bool

	ignore []kustomizev1.IgnoreRule
	// policy is Correct or Report; "" when drift is neither corrected nor
	// reported (a HelmRelease's driftDetection.mode: disabled).
	policy kustomizev1.DriftPolicy
	// prune says whether objects the render no longer has are deleted.
	prune bool
	// namespace is given to rendered namespaced objects that name none.
	namespace string
	// origin words where the desired state comes from, in messages:
	// "Git" or "the chart".
	origin string
}

// appliedKustomization views a Kustomization.
func appliedKustomization(ks *kustomizev1.Kustomization) *applied {
	a := &applied{
		obj: ks, kind: kustomizationKind,
		inventory: ks.Status.Inventory, drift: ks.Status.Drift, rendered: ks.Status.RenderedArtifact,
		sync: ks.Status.Sync, conditions: ks.Status.Conditions,
		lastApplied: ks.Status.LastAppliedRevision, lastAttempted: ks.Status.LastAttemptedRevision,
		ignore: ks.Spec.Ignore, policy: ks.GetDriftPolicy(), prune: ks.Spec.Prune, namespace: ks.Namespace,
		origin: "Git",
	}
	a.renderApplied = a.rendered == nil || a.rendered.Revision == a.lastApplied
	return a
}

// appliedHelmRelease views a HelmRelease. A release always prunes, as
// Helm deletes what an upgrade no longer renders.
func appliedHelmRelease(hr *helmv2.HelmRelease) *applied {
	a := &applied{
		obj: hr, kind: helmReleaseKind,
		inventory: hr.Status.Inventory, drift: hr.Status.Drift, rendered: hr.Status.RenderedArtifact,
		sync: hr.Status.Sync, conditions: hr.Status.Conditions,
		lastApplied: hr.Status.LastAppliedRevision, lastAttempted: hr.Status.LastAttemptedRevision,
		prune: true, namespace: hr.GetReleaseNamespace(),
		origin: "the chart",
	}
	if dd := hr.Spec.DriftDetection; dd != nil {
		a.ignore = dd.Ignore
	}
	switch hr.GetDriftDetectionMode() {
	case helmv2.DriftDetectionEnabled:
		a.policy = kustomizev1.DriftPolicyCorrect
	case helmv2.DriftDetectionWarn:
		a.policy = kustomizev1.DriftPolicyReport
	}
	a.renderApplied = a.rendered == nil
	if deployed := deployedRelease(hr); deployed != nil && a.rendered != nil {
		a.renderApplied = deployed.Digest == a.rendered.Digest
	}
	return a
}

// deployedRelease is the newest history entry with status deployed, nil
// while the release is still installing.
func deployedRelease(hr *helmv2.HelmRelease) *helmv2.Snapshot {
	for i := range hr.Status.History {
		if hr.Status.History[i].Status == helmv2.ReleaseStatusDeployed {
			return &hr.Status.History[i]
		}
	}
	return nil
}

// appliedOf views obj if it is a kind sync-controller applies.
func appliedOf(obj client.Object) (*applied, bool) {
	switch o := obj.(type) {
	case *kustomizev1.Kustomization:
		return appliedKustomization(o), true
	case *helmv2.HelmRelease:
		return appliedHelmRelease(o), true
	}
	return nil, false
}

// policyText words the drift policy for the Sync status line.
func (a *applied) policyText() string {
	if a.kind == helmReleaseKind {
		if a.policy == "" {
			return driftDisabledTxt
		}
		return "driftDetection " + a.obj.(*helmv2.HelmRelease).GetDriftDetectionMode()
	}
	return "driftPolicy " + string(a.policy)
}

// isHook says whether sync-controller runs obj as a hook (or never applies
// it) rather than keeping it in step: plumb.dev/hook or helm.sh/hook, which
// pkg/plan maps onto Plumb's phases whoever renders it (a Kustomization
// may hold `helm template` output too).
func (a *applied) isHook(obj *unstructured.Unstructured) bool { return plan.IsHook(obj) }

// keptFromPrune says why an object the render no longer has stays, "" when
// a sync prunes it.
func (a *applied) keptFromPrune(live *unstructured.Unstructured) string {
	switch {
	case !a.prune:
		return "spec.prune is off, so it stays"
	case manage.NeverPruned(live.GetAnnotations()) != "":
		// sync-controller's rule, for both kinds.
		return "annotated " + manage.NeverPruned(live.GetAnnotations()) + ", so it stays"
	}
	return ""
}

// stamp adds the ownership labels and the applied-hash annotation as
// sync-controller does (pkg/manage), with the kind's labels.
func (a *applied) stamp(obj *unstructured.Unstructured) error {
	_, err := manage.Stamp(obj, manage.Owner{Kind: a.kind.Kind, Namespace: a.obj.GetNamespace(), Name: a.obj.GetName()})
	return err
}

// secretRedactor hides the values that came from Secrets: a Kustomization's
// postBuild.substituteFrom Secrets (drift.SecretRedactor, as sync-controller
// redacts its reports), a HelmRelease's valuesFrom Secrets (every scalar of
// their values). A Secret this user cannot read hides every value.
func (a *applied) secretRedactor(ctx context.Context, c client.Reader) (*diff.Redactor, error) {
	switch o := a.obj.(type) {
	case *kustomizev1.Kustomization:
		return drift.SecretRedactor(ctx, c, o)
	case *helmv2.HelmRelease:
		return valuesSecretRedactor(ctx, c, o)
	}
	return nil, nil
}

// valuesSecretRedactor collects every scalar value of a HelmRelease's
// valuesFrom Secrets: any of them may end up in a rendered field.
func valuesSecretRedactor(ctx context.Context, c client.Reader, hr *helmv2.HelmRelease) (*diff.Redactor, error) {
	var values []string
	for _, ref := range hr.Spec.ValuesFrom {
		if ref.Kind != "Secret" {
			continue
		}
		secret := &corev1.Secret{}
		key := types.NamespacedName{Namespace: hr.Namespace, Name: ref.Name}
		err := c.Get(ctx, key, secret)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return diff.RedactAll(), fmt.Errorf("reading Secret %s (valuesFrom) to redact its values: %w", key, err)
		}
		data, ok := secret.Data[ref.GetValuesKey()]
		if !ok {
			continue
		}
		if ref.TargetPath != "" {
			// One value, as --set reads it: quotes are not part of it.
			v := strings.TrimSpace(string(data))
			values = append(values, v, strings.Trim(v, `"'`))
			continue
		}
		var doc any
		if err := yaml.Unmarshal(data, &doc); err != nil {
			// Not values render-controller could have used; hide it whole.
			values = append(values, string(data))
			continue
		}
		values = append(values, scalars(doc)...)
	}
	if len(values) == 0 {
		return nil, nil
	}
	sort.Strings(values)
	return diff.NewRedactor(values), nil
}

// scalars lists the string forms of every leaf of a YAML document.
func scalars(v any) []string {
	switch v := v.(type) {
	case map[string]any:
		var out []string
		for _, e := range v {
			out = append(out, scalars(e)...)
		}
		return out
	case []any:
		var out []string
		for _, e := range v {
			out = append(out, scalars(e)...)
		}
		return out
	case nil:
		return nil
	case string:
		return []string{v}
	default:
		return []string{fmt.Sprint(v)}
	}
}

// ignoreField names the field of the ignore rules in messages.
func (a *applied) ignoreField() string {
	if a.kind == helmReleaseKind {
		return "spec.driftDetection.ignore"
	}
	return "spec.ignore"
}

// helmChartKey is the HelmChart a HelmRelease renders: spec.chartRef, or
// the one render-controller creates for spec.chart.
func helmChartKey(hr *helmv2.HelmRelease) types.NamespacedName {
	ns, name := hr.GetHelmChart()
	return types.NamespacedName{Namespace: ns, Name: name}
}

// chartSourceKey is the kind and key of a HelmChart's source, in its
// namespace.
func chartSourceKey(chart *sourcev1.HelmChart) (*kind, types.NamespacedName) {
	k := helmRepositoryKind
	if chart.Spec.SourceRef.Kind == sourcev1.GitRepositoryKind {
		k = gitRepositoryKind
	}
	return k, types.NamespacedName{Namespace: chart.Namespace, Name: chart.Spec.SourceRef.Name}
}

// sourceURL is a source's spec.url.
func sourceURL(src client.Object) string {
	switch s := src.(type) {
	case *sourcev1.GitRepository:
		return s.Spec.URL
	case *sourcev1.HelmRepository:
		return s.Spec.URL
	}
	return "-"
}
