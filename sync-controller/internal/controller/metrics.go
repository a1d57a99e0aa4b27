package controller

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	"plumb.dev/pkg/manage"
	plumbmetrics "plumb.dev/pkg/metrics"
)

// Metrics are sync-controller's Prometheus metrics: the per-object set
// every controller keeps (pkg/metrics: reconcile duration, Ready,
// suspended, rendered artifact size), one per kind (plumb_sync_… for
// Kustomizations, plumb_sync_helmrelease_… for HelmReleases), and the
// sync's own counters, labelled with the kind. sync-controller owns the
// Ready condition of both kinds, so it, not render-controller, reports
// Flux's gotk_* series for them (kind="Kustomization", "HelmRelease"). A
// nil *Metrics records nothing.
type Metrics struct {
	objects         *plumbmetrics.Object
	helmReleases    *plumbmetrics.Object
	objectsTotal    *prometheus.CounterVec
	driftDetected   *prometheus.CounterVec
	driftCorrected  *prometheus.CounterVec
	driftCorrection prometheus.Histogram
}

// NewMetrics creates the metrics and registers them with reg
// (controller-runtime's metrics.Registry in the binary, so /metrics serves
// them).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		objects: plumbmetrics.NewObject(reg, plumbmetrics.Spec{
			Subsystem: "sync", Kind: kustomizev1.KustomizationKind, Condition: meta.ReadyCondition, Toolkit: true,
		}),
		helmReleases: plumbmetrics.NewObject(reg, plumbmetrics.Spec{
			Subsystem: "sync_helmrelease", Kind: helmv2.HelmReleaseKind, Condition: meta.ReadyCondition, Toolkit: true,
		}),
		objectsTotal: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "plumb_sync_objects_total",
			Help: "Objects handled by syncs, by action (Created, Configured, Unchanged, Deleted).",
		}, []string{"action"}),
		driftDetected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "plumb_sync_drift_detected_total",
			Help: "Syncs that found at least one object differing from Git (or the chart).",
		}, []string{"kind", "namespace", "name"}),
		driftCorrected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "plumb_sync_drift_corrected_total",
			Help: "Syncs that reverted drift.",
		}, []string{"kind", "namespace", "name"}),
		driftCorrection: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "plumb_sync_drift_correction_seconds",
			Help:    "Time from seeing a foreign write to a managed object to having reverted it.",
			Buckets: []float64{0.05, 0.1, 0.25, 0.5, 0.75, 1, 1.5, 2, 5, 10, 30},
		}),
	}
	reg.MustRegister(m.objectsTotal, m.driftDetected, m.driftCorrected, m.driftCorrection)
	return m
}

// objectSet is the per-object set of a kind, for the reconcile skeleton.
func (m *Metrics) objectSet(kind string) *plumbmetrics.Object {
	if m == nil {
		return nil
	}
	if kind == helmv2.HelmReleaseKind {
		return m.helmReleases
	}
	return m.objects
}

// handled counts n objects a sync handled with action.
func (m *Metrics) handled(action string, n int) {
	if m != nil && n > 0 {
		m.objectsTotal.WithLabelValues(action).Add(float64(n))
	}
}

// driftFound counts a sync that found drift.
func (m *Metrics) driftFound(o manage.Owner) {
	if m != nil {
		m.driftDetected.WithLabelValues(o.Kind, o.Namespace, o.Name).Inc()
	}
}

// driftReverted counts a sync that reverted drift, seen after the watcher
// saw the foreign write (zero: not seen by the watcher first).
func (m *Metrics) driftReverted(o manage.Owner, seen time.Duration) {
	if m == nil {
		return
	}
	m.driftCorrected.WithLabelValues(o.Kind, o.Namespace, o.Name).Inc()
	if seen > 0 {
		m.driftCorrection.Observe(seen.Seconds())
	}
}

// forget drops the series of a deleted object.
func (m *Metrics) forget(app application) {
	if m == nil {
		return
	}
	o := app.owner()
	m.objectSet(o.Kind).Forget(o.Namespace, o.Name)
	m.driftDetected.DeleteLabelValues(o.Kind, o.Namespace, o.Name)
	m.driftCorrected.DeleteLabelValues(o.Kind, o.Namespace, o.Name)
}
