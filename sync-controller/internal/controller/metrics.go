package controller

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	reconcileDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "plumb_sync_reconcile_duration_seconds",
		Help:    "How long one Kustomization sync took.",
		Buckets: prometheus.ExponentialBuckets(0.01, 2, 14),
	}, []string{"namespace", "name"})
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
	readyGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "plumb_sync_ready",
		Help: "1 when the Kustomization is Ready, 0 otherwise.",
	}, []string{"namespace", "name"})
	suspendedGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "plumb_sync_suspended",
		Help: "1 when the Kustomization is suspended.",
	}, []string{"namespace", "name"})
)

func init() {
	metrics.Registry.MustRegister(reconcileDuration, objectsTotal, driftDetected, driftCorrected, driftCorrection, readyGauge, suspendedGauge)
}
