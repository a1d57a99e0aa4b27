package controller

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/metrics"
)

// Metrics are render-controller's Prometheus metrics (pkg/metrics' set);
// the package doc lists their names.
type Metrics struct{ set *metrics.Object }

// NewMetrics creates the metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	return &Metrics{set: metrics.NewObject(reg, metrics.Spec{
		Subsystem: "render", Kind: kustomizev1.KustomizationKind, Condition: kustomizev1.RenderedCondition,
		Work:     "builds_total",
		WorkHelp: "kustomize builds run; a reconcile whose inputs are unchanged builds nothing.",
	})}
}

func (m *Metrics) observe(obj *kustomizev1.Kustomization, start time.Time) {
	if m != nil {
		m.set.Observe(obj.Namespace, obj.Name, start)
	}
}

func (m *Metrics) record(obj *kustomizev1.Kustomization) {
	if m == nil {
		return
	}
	var size *int64
	if obj.Status.RenderedArtifact != nil {
		size = obj.Status.RenderedArtifact.Size
	}
	m.set.Record(obj.Namespace, obj.Name, obj.Status.Conditions, obj.Spec.Suspend, size)
}

func (m *Metrics) built(obj *kustomizev1.Kustomization) {
	if m != nil {
		m.set.Worked(obj.Namespace, obj.Name)
	}
}

// forget drops the series of a deleted object.
func (m *Metrics) forget(namespace, name string) {
	if m != nil {
		m.set.Forget(namespace, name)
	}
}
