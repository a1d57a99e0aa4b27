package controller

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/metrics"
)

// Metrics are source-controller's Prometheus metrics (pkg/metrics' set);
// the package doc lists their names.
type Metrics struct{ set *metrics.Object }

// NewMetrics creates the metrics and registers them with reg
// (controller-runtime's metrics.Registry in the binary, so /metrics serves them).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	return &Metrics{set: metrics.NewObject(reg, metrics.Spec{
		Subsystem: "source", Kind: sourcev1.GitRepositoryKind, Condition: meta.ReadyCondition,
		Work:     "fetches_total",
		WorkHelp: "Fetches (clones) from the remote; a reconcile whose remote head is unchanged fetches nothing.",
	})}
}

func (m *Metrics) observe(obj *sourcev1.GitRepository, start time.Time) {
	if m != nil {
		m.set.Observe(obj.Namespace, obj.Name, start)
	}
}

func (m *Metrics) record(obj *sourcev1.GitRepository) {
	if m == nil {
		return
	}
	var size *int64
	if obj.Status.Artifact != nil {
		size = obj.Status.Artifact.Size
	}
	m.set.Record(obj.Namespace, obj.Name, obj.Status.Conditions, obj.Spec.Suspend, size)
}

func (m *Metrics) fetched(obj *sourcev1.GitRepository) {
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
