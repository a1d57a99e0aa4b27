package controller

import (
	"github.com/prometheus/client_golang/prometheus"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/metrics"
)

// NewMetrics creates render-controller's Prometheus metrics (pkg/metrics'
// set, the package doc lists their names) and registers them with reg:
// per object only the Rendered condition (ConditionOnly), since
// sync-controller exports the suspension and the rendered artifact's size
// of the same Kustomization.
func NewMetrics(reg prometheus.Registerer) *metrics.Object {
	return metrics.NewObject(reg, metrics.Spec{
		Subsystem: "render", Kind: kustomizev1.KustomizationKind, Condition: kustomizev1.RenderedCondition, ConditionOnly: true,
		Work:     "builds_total",
		WorkHelp: "kustomize builds run; a reconcile whose inputs are unchanged builds nothing.",
	})
}

// NewHelmReleaseMetrics creates the HelmRelease metrics (pkg/metrics' set
// under plumb_render_helmrelease_…, ConditionOnly as NewMetrics) and
// registers them with reg.
func NewHelmReleaseMetrics(reg prometheus.Registerer) *metrics.Object {
	return metrics.NewObject(reg, metrics.Spec{
		Subsystem: "render_helmrelease", Kind: helmv2.HelmReleaseKind, Condition: kustomizev1.RenderedCondition, ConditionOnly: true,
		Work:     "renders_total",
		WorkHelp: "Helm chart renders run; a reconcile whose inputs are unchanged renders nothing.",
	})
}
