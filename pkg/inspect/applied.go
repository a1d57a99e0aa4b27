package inspect

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

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
	"plumb.dev/pkg/diff"
	"plumb.dev/pkg/drift"
	"plumb.dev/pkg/health"
	"plumb.dev/pkg/healthexpr"
	"plumb.dev/pkg/manage"
	"plumb.dev/pkg/plan"
)

// Applied is an object sync-controller keeps in step with a render — a
// Kustomization or a HelmRelease — as `plumb diff`, `plumb tree` and the UI
// read it: one view over the two kinds, whose statuses hold the same
// inventory, drift and sync types.
type Applied struct {
	Object client.Object
	// Kind is kustomizev1.KustomizationKind or helmv2.HelmReleaseKind.
	Kind string

	Inventory  *kustomizev1.Inventory
	Drift      *kustomizev1.DriftStatus
	Rendered   *meta.Artifact
	Sync       *kustomizev1.SyncProgress
	Conditions []metav1.Condition

	LastApplied, LastAttempted string
	// RenderApplied says whether the newest render has been applied: for a
	// Kustomization its revision is the last applied one, for a HelmRelease
	// its digest is the newest deployed release's (a values change keeps
	// the chart version).
	RenderApplied bool

	Ignore []kustomizev1.IgnoreRule
	// Policy is Correct or Report; "" when drift is neither corrected nor
	// reported (a HelmRelease's driftDetection.mode: disabled).
	Policy kustomizev1.DriftPolicy
	// Prune says whether objects the render no longer has are deleted.
	Prune bool
	// Namespace is given to rendered namespaced objects that name none.
	Namespace string
	// Origin words where the desired state comes from, in messages:
	// "Git" or "the chart".
	Origin string

	// SyncPolicy is spec.syncPolicy (Automatic when unset); ManualSync
	// what sync-controller recorded of manual syncs (status.outOfSync,
	// status.lastHandledSyncAt).
	SyncPolicy kustomizev1.SyncPolicy
	ManualSync kustomizev1.ManualSyncStatus

	// HealthCheckExprs are a Kustomization's spec.healthCheckExprs (a
	// HelmRelease has none); Health judges by them.
	HealthCheckExprs []kustomizev1.CustomHealthCheck
	checksOnce       sync.Once
	checks           *healthexpr.Checks
}

// Health returns obj's health as sync-controller's waits judge it: by
// HealthCheckExprs for the kinds they name, by pkg/health otherwise. An
// entry that does not compile judges its kind Unknown with the error (the
// Kustomization is Stalled with it too).
func (a *Applied) Health(obj *unstructured.Unstructured) health.Result {
	a.checksOnce.Do(func() {
		// The error is in the Checks, per kind, and in the object's status.
		a.checks, _ = healthexpr.Compile(a.HealthCheckExprs)
	})
	return a.checks.Evaluate(obj)
}

// AppliedKustomization views a Kustomization.
func AppliedKustomization(ks *kustomizev1.Kustomization) *Applied {
	a := &Applied{
		Object: ks, Kind: kustomizev1.KustomizationKind,
		Inventory: ks.Status.Inventory, Drift: ks.Status.Drift, Rendered: ks.Status.RenderedArtifact,
		Sync: ks.Status.Sync, Conditions: ks.Status.Conditions,
		LastApplied: ks.Status.LastAppliedRevision, LastAttempted: ks.Status.LastAttemptedRevision,
		Ignore: ks.Spec.Ignore, Policy: ks.GetDriftPolicy(), Prune: ks.Spec.Prune, Namespace: ks.Namespace,
		Origin: "Git", HealthCheckExprs: ks.Spec.HealthCheckExprs,
		SyncPolicy: ks.GetSyncPolicy(), ManualSync: ks.Status.ManualSyncStatus,
	}
	a.RenderApplied = a.Rendered == nil || a.Rendered.Revision == a.LastApplied
	return a
}

// AppliedHelmRelease views a HelmRelease. A release always prunes, as
// Helm deletes what an upgrade no longer renders.
func AppliedHelmRelease(hr *helmv2.HelmRelease) *Applied {
	a := &Applied{
		Object: hr, Kind: helmv2.HelmReleaseKind,
		Inventory: hr.Status.Inventory, Drift: hr.Status.Drift, Rendered: hr.Status.RenderedArtifact,
		Sync: hr.Status.Sync, Conditions: hr.Status.Conditions,
		LastApplied: hr.Status.LastAppliedRevision, LastAttempted: hr.Status.LastAttemptedRevision,
		Prune: true, Namespace: hr.GetReleaseNamespace(),
		Origin:     "the chart",
		SyncPolicy: hr.GetSyncPolicy(), ManualSync: hr.Status.ManualSyncStatus,
	}
	if dd := hr.Spec.DriftDetection; dd != nil {
		a.Ignore = dd.Ignore
	}
	switch hr.GetDriftDetectionMode() {
	case helmv2.DriftDetectionEnabled:
		a.Policy = kustomizev1.DriftPolicyCorrect
	case helmv2.DriftDetectionWarn:
		a.Policy = kustomizev1.DriftPolicyReport
	}
	a.RenderApplied = a.Rendered == nil
	if deployed := DeployedRelease(hr); deployed != nil && a.Rendered != nil {
		a.RenderApplied = deployed.Digest == a.Rendered.Digest
	}
	return a
}

// DeployedRelease is the newest history entry with status deployed, nil
// while the release is still installing.
func DeployedRelease(hr *helmv2.HelmRelease) *helmv2.Snapshot {
	for i := range hr.Status.History {
		if hr.Status.History[i].Status == helmv2.ReleaseStatusDeployed {
			return &hr.Status.History[i]
		}
	}
	return nil
}

// AppliedOf views obj if it is a kind sync-controller applies.
func AppliedOf(obj client.Object) (*Applied, bool) {
	switch o := obj.(type) {
	case *kustomizev1.Kustomization:
		return AppliedKustomization(o), true
	case *helmv2.HelmRelease:
		return AppliedHelmRelease(o), true
	}
	return nil, false
}

// IsHelmRelease says whether the view is of a HelmRelease.
func (a *Applied) IsHelmRelease() bool { return a.Kind == helmv2.HelmReleaseKind }

// IsHook says whether sync-controller runs obj as a hook (or never applies
// it) rather than keeping it in step: plumb.dev/hook, argocd.argoproj.io/hook
// or helm.sh/hook, which
// pkg/plan maps onto Plumb's phases whoever renders it (a Kustomization
// may hold `helm template` output too).
func (a *Applied) IsHook(obj *unstructured.Unstructured) bool { return plan.IsHook(obj) }

// KeptFromPrune says why an object the render no longer has stays, "" when
// a sync prunes it.
func (a *Applied) KeptFromPrune(live *unstructured.Unstructured) string {
	switch {
	case !a.Prune:
		return "spec.prune is off, so it stays"
	case manage.KeptBy(live, manage.LeftTheSet) != "":
		// sync-controller's rule, for both kinds.
		return "kept by " + manage.KeptBy(live, manage.LeftTheSet)
	}
	return ""
}

// Owner is the owner sync-controller records on the objects it applies.
func (a *Applied) Owner() manage.Owner {
	return manage.Owner{Kind: a.Kind, Namespace: a.Object.GetNamespace(), Name: a.Object.GetName()}
}

// Stamp adds the ownership labels and the applied-hash annotation as
// sync-controller does (pkg/manage), with the kind's labels.
func (a *Applied) Stamp(obj *unstructured.Unstructured) error {
	_, err := manage.Stamp(obj, a.Owner())
	return err
}

// IgnoreField names the field of the ignore rules in messages.
func (a *Applied) IgnoreField() string {
	if a.IsHelmRelease() {
		return "spec.driftDetection.ignore"
	}
	return "spec.ignore"
}

// SecretRedactor hides the values that came from Secrets: a Kustomization's
// postBuild.substituteFrom Secrets (drift.SecretRedactor, as sync-controller
// redacts its reports), a HelmRelease's valuesFrom Secrets (every scalar of
// their values). A Secret this user cannot read hides every value.
func (a *Applied) SecretRedactor(ctx context.Context, c client.Reader) (*diff.Redactor, error) {
	switch o := a.Object.(type) {
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

// HelmChartKey is the HelmChart a HelmRelease renders: spec.chartRef, or
// the one render-controller creates for spec.chart.
func HelmChartKey(hr *helmv2.HelmRelease) types.NamespacedName {
	ns, name := hr.GetHelmChart()
	return types.NamespacedName{Namespace: ns, Name: name}
}
