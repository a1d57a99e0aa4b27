package controller

import (
	"github.com/prometheus/client_golang/prometheus"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/metrics"
)

// NewMetrics creates render-controller's Prometheus metrics (pkg/metrics'
// set, the package doc lists their names) and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *metrics.Object {
	return metrics.NewObject(reg, metrics.Spec{
		Subsystem: "render", Kind: kustomizev1.KustomizationKind, Condition: kustomizev1.RenderedCondition,
		Work:     "builds_total",
		WorkHelp: "kustomize builds run; a reconcile whose inputs are unchanged builds nothing.",
	})
}
