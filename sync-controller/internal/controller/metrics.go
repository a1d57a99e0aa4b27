package controller

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	plumbmetrics "plumb.dev/pkg/metrics"
)

// objectMetrics is the per-Kustomization set every controller keeps:
// reconcile duration, Ready, suspended and rendered artifact size.
var objectMetrics = plumbmetrics.NewObject(metrics.Registry, plumbmetrics.Spec{
	Subsystem: "sync", Kind: kustomizev1.KustomizationKind, Condition: meta.ReadyCondition,
})

var (
	objectsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "plumb_sync_objects_total",
		Help: "Objects handled by syncs, by action (Created, Configured, Unchanged, Deleted).",
	}, []string{"action"})
	driftDetected = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "plumb_sync_drift_detected_total",
		Help: "Syncs that found at least one object differing from Git.",
	}, []string{"namespace", "name"})
	driftCorrected = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "plumb_sync_drift_corrected_total",
		Help: "Syncs that reverted drift.",
	}, []string{"namespace", "name"})
	driftCorrection = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "plumb_sync_drift_correction_seconds",
		Help:    "Time from seeing a foreign write to a managed object to having reverted it.",
		Buckets: []float64{0.05, 0.1, 0.25, 0.5, 0.75, 1, 1.5, 2, 5, 10, 30},
	})
)

func init() {
	metrics.Registry.MustRegister(objectsTotal, driftDetected, driftCorrected, driftCorrection)
}
