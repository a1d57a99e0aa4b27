package overview

import (
	"regexp"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	setv1 "plumb.dev/api/set/v1"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/health"
	"plumb.dev/pkg/kinds"
)

// Row is one object of the overview (docs/design/ui.md, "Overview row").
type Row struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Ready is the Ready condition's status: True, False or Unknown.
	Ready     string `json:"ready"`
	Reason    string `json:"reason"`
	Message   string `json:"message"`
	Suspended bool   `json:"suspended"`
	Revision  string `json:"revision"`
	// Health and Drift are those of the objects a Kustomization or
	// HelmRelease applied; sources have neither.
	Health   *Health    `json:"health,omitempty"`
	Drift    *Drift     `json:"drift,omitempty"`
	LastSync *time.Time `json:"lastSync,omitempty"`
	Source   *Ref       `json:"source,omitempty"`

	// status is the count key the row counts under.
	status string
}

// ref names the row's object.
func (r *Row) ref() Ref { return Ref{Kind: r.Kind, Namespace: r.Namespace, Name: r.Name} }

// Health counts the applied objects by health.
type Health struct {
	Healthy     int `json:"healthy"`
	Progressing int `json:"progressing"`
	Degraded    int `json:"degraded"`
	Unknown     int `json:"unknown"`
}

// Drift states.
const (
	DriftNone      = "none"
	DriftDrifted   = "drifted"
	DriftCorrected = "corrected"
	DriftContested = "contested"
)

// Drift is where an applied object set stands against Git.
type Drift struct {
	// State is none, drifted (the cluster differs, driftPolicy Report),
	// corrected (it differed and sync-controller reverted it), or
	// contested (another field manager keeps rewriting what Git sets).
	State        string     `json:"state"`
	Count        int        `json:"count"`
	LastDetected *time.Time `json:"lastDetected,omitempty"`
}

// Ref names another object.
type Ref struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// Status keys: the overview's counts and its status filter.
const (
	StatusReady       = "Ready"
	StatusNotReady    = "NotReady"
	StatusProgressing = "Progressing"
	StatusSuspended   = "Suspended"
)

// rowOf turns one object of the overview's kinds (kinds.All) into its
// row; nil for any other object.
func rowOf(obj client.Object) *Row {
	if r := imageRow(obj); r != nil {
		return r
	}
	switch o := obj.(type) {
	case *kustomizev1.Kustomization:
		r := conditionsRow(kustomizev1.KustomizationKind, o, o.Status.Conditions, o.Spec.Suspend)
		r.Revision = o.Status.LastAppliedRevision
		ns := o.Spec.SourceRef.Namespace
		if ns == "" {
			ns = o.Namespace
		}
		r.Source = &Ref{Kind: o.Spec.SourceRef.Kind, Namespace: ns, Name: o.Spec.SourceRef.Name}
		if r.Source.Kind == "" {
			r.Source.Kind = sourcev1.GitRepositoryKind
		}
		applied(r, o.Status.Conditions, o.Status.Inventory, o.Status.Drift, o.Status.Sync)
		return r
	case *helmv2.HelmRelease:
		r := conditionsRow(helmv2.HelmReleaseKind, o, o.Status.Conditions, o.Spec.Suspend)
		r.Revision = o.Status.LastAppliedRevision
		ns, name := o.GetHelmChart()
		r.Source = &Ref{Kind: o.GetChartSourceKind(), Namespace: ns, Name: name}
		applied(r, o.Status.Conditions, o.Status.Inventory, o.Status.Drift, o.Status.Sync)
		return r
	case *setv1.ObjectSet:
		// No revision or source: a set's elements come from its
		// generators, which its page sums up.
		return conditionsRow(setv1.ObjectSetKind, o, o.Status.Conditions, o.Spec.Suspend)
	case *sourcev1.HelmChart:
		r := conditionsRow(sourcev1.HelmChartKind, o, o.Status.Conditions, o.Spec.Suspend)
		artifact(r, o.Status.Artifact)
		r.Source = &Ref{Kind: o.Spec.SourceRef.Kind, Namespace: o.Namespace, Name: o.Spec.SourceRef.Name}
		return r
	}
	// Any other source: its conditions and the artifact it serves.
	k, ok := kinds.Of(obj)
	src, holds := obj.(meta.ArtifactHolder)
	c, conditioned := obj.(interface{ GetConditions() []metav1.Condition })
	if !ok || !holds || !conditioned {
		return nil
	}
	s, _ := obj.(meta.Suspendable)
	r := conditionsRow(k.GVK.Kind, obj, c.GetConditions(), s != nil && s.IsSuspended())
	artifact(r, src.GetArtifact())
	return r
}

// conditionsRow fills what every kind has: name, Ready, suspension, and
// the status key. A suspended object counts as Suspended whatever its
// Ready; Ready=True as Ready; Ready=False as NotReady unless the
// controller is still working (Reconciling=True for another reason than a
// retry after a failure); anything else — no Ready yet, Unknown — as
// Progressing.
func conditionsRow(kind string, obj client.Object, conds []metav1.Condition, suspended bool) *Row {
	r := &Row{Kind: kind, Namespace: obj.GetNamespace(), Name: obj.GetName(), Ready: string(metav1.ConditionUnknown), Suspended: suspended}
	ready := apimeta.FindStatusCondition(conds, meta.ReadyCondition)
	if ready != nil {
		r.Ready, r.Reason, r.Message = string(ready.Status), ready.Reason, ready.Message
	}
	reconciling := apimeta.FindStatusCondition(conds, meta.ReconcilingCondition)
	working := reconciling != nil && reconciling.Status == metav1.ConditionTrue && reconciling.Reason != meta.ProgressingWithRetryReason
	switch {
	case suspended:
		r.status = StatusSuspended
	case ready != nil && ready.Status == metav1.ConditionTrue:
		r.status = StatusReady
	case ready != nil && ready.Status == metav1.ConditionFalse && !working:
		r.status = StatusNotReady
	default:
		r.status = StatusProgressing
	}
	return r
}

// artifact fills a source's revision and last sync from its artifact.
func artifact(r *Row, a *meta.Artifact) {
	if a == nil {
		return
	}
	r.Revision = a.Revision
	if !a.LastUpdateTime.IsZero() {
		t := a.LastUpdateTime.UTC()
		r.LastSync = &t
	}
}

// applied fills the health, drift and last sync of a Kustomization or
// HelmRelease.
func applied(r *Row, conds []metav1.Condition, inv *kustomizev1.Inventory, drift *kustomizev1.DriftStatus, sync *kustomizev1.SyncProgress) {
	n := 0
	if inv != nil {
		n = len(inv.Entries)
	}
	r.Health = healthOf(apimeta.FindStatusCondition(conds, kustomizev1.HealthyCondition), n)
	r.Drift = driftOf(conds, drift)
	if sync != nil && sync.FinishedAt != nil {
		t := sync.FinishedAt.UTC()
		r.LastSync = &t
	}
}

// pendingHealth finds each object sync-controller's Healthy condition
// names as not healthy: "timed out waiting for health:
// Deployment/apps/web is Progressing: 1 of 2 replicas available; …".
var pendingHealth = regexp.MustCompile(`(?:^|: |; )\S+ is (` + string(health.Progressing) + `|` + string(health.Degraded) + `|` + string(health.Unknown) + `)\b`)

// healthOf summarizes the health of n applied objects from the Healthy
// condition, which is all the status says of them: True means all n are
// healthy; False names the ones that are not (the rest were); no
// condition means sync-controller did not check (no spec.wait), so all n
// are Unknown.
func healthOf(c *metav1.Condition, n int) *Health {
	h := &Health{}
	switch {
	case c == nil:
		h.Unknown = n
	case c.Status == metav1.ConditionTrue:
		h.Healthy = n
	default:
		for _, m := range pendingHealth.FindAllStringSubmatch(c.Message, -1) {
			switch health.Status(m[1]) {
			case health.Progressing:
				h.Progressing++
			case health.Degraded:
				h.Degraded++
			default:
				h.Unknown++
			}
		}
		if named := h.Progressing + h.Degraded + h.Unknown; named == 0 {
			// A failure that names no object (a health check that could
			// not be read): none is known to be healthy.
			h.Unknown = n
		} else if n > named {
			h.Healthy = n - named
		}
	}
	return h
}

// driftOf is the drift state from status.drift and the Drifted and
// DriftContested conditions.
func driftOf(conds []metav1.Condition, d *kustomizev1.DriftStatus) *Drift {
	out := &Drift{State: DriftNone}
	if d != nil {
		out.Count = d.Count
		if d.LastDetected != nil {
			t := d.LastDetected.UTC()
			out.LastDetected = &t
		}
	}
	switch {
	case (d != nil && len(d.Contested) > 0) || apimeta.IsStatusConditionTrue(conds, kustomizev1.DriftContestedCondition):
		out.State = DriftContested
	case apimeta.IsStatusConditionTrue(conds, kustomizev1.DriftedCondition):
		out.State = DriftDrifted
	case d != nil && d.Count > 0:
		// Under driftPolicy Correct the drift counted is already reverted.
		out.State = DriftCorrected
	}
	return out
}
