package controller

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	plumbmetrics "plumb.dev/pkg/metrics"
)

// Metrics are sync-controller's Prometheus metrics: the per-Kustomization
// set every controller keeps (pkg/metrics: reconcile duration, Ready,
// suspended, rendered artifact size) and the sync's own counters. A nil
// *Metrics records nothing.
type Metrics struct {
	objects         *plumbmetrics.Object
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
			Subsystem: "sync", Kind: kustomizev1.KustomizationKind, Condition: meta.ReadyCondition,
		}),
		objectsTotal: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "plumb_sync_objects_total",
			Help: "Objects handled by syncs, by action (Created, Configured, Unchanged, Deleted).",
		}, []string{"action"}),
		driftDetected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "plumb_sync_drift_detected_total",
			Help: "Syncs that found at least one object differing from Git.",
		}, []string{"namespace", "name"}),
		driftCorrected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "plumb_sync_drift_corrected_total",
			Help: "Syncs that reverted drift.",
		}, []string{"namespace", "name"}),
		driftCorrection: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "plumb_sync_drift_correction_seconds",
			Help:    "Time from seeing a foreign write to a managed object to having reverted it.",
			Buckets: []float64{0.05, 0.1, 0.25, 0.5, 0.75, 1, 1.5, 2, 5, 10, 30},
		}),
	}
	reg.MustRegister(m.objectsTotal, m.driftDetected, m.driftCorrected, m.driftCorrection)
	return m
}

// objectSet is the per-Kustomization set, for the reconcile skeleton.
func (m *Metrics) objectSet() *plumbmetrics.Object {
	if m == nil {
		return nil
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
func (m *Metrics) driftFound(ks *kustomizev1.Kustomization) {
	if m != nil {
		m.driftDetected.WithLabelValues(ks.Namespace, ks.Name).Inc()
	}
}

// driftReverted counts a sync that reverted drift, seen after the watcher
// saw the foreign write (zero: not seen by the watcher first).
func (m *Metrics) driftReverted(ks *kustomizev1.Kustomization, seen time.Duration) {
	if m == nil {
		return
	}
	m.driftCorrected.WithLabelValues(ks.Namespace, ks.Name).Inc()
	if seen > 0 {
		m.driftCorrection.Observe(seen.Seconds())
	}
}

// forget drops the series of a deleted Kustomization.
func (m *Metrics) forget(ks *kustomizev1.Kustomization) {
	if m == nil {
		return
	}
	m.objects.Forget(ks.Namespace, ks.Name)
	m.driftDetected.DeleteLabelValues(ks.Namespace, ks.Name)
	m.driftCorrected.DeleteLabelValues(ks.Namespace, ks.Name)
}
