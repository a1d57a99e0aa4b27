package controller

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
)

// Metrics are source-controller's Prometheus metrics; the package doc
// lists their names.
type Metrics struct {
	duration  *prometheus.HistogramVec
	ready     *prometheus.GaugeVec
	suspended *prometheus.GaugeVec
	size      *prometheus.GaugeVec
	fetches   *prometheus.CounterVec
}

// NewMetrics creates the metrics and registers them with reg (controller-
// runtime's metrics.Registry in the binary, so /metrics serves them).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	labels := []string{"namespace", "name"}
	m := &Metrics{
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "plumb_source_reconcile_duration_seconds",
			Help:    "How long one reconcile of a GitRepository took.",
			Buckets: prometheus.ExponentialBuckets(0.01, 2, 12),
		}, labels),
		ready: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "plumb_source_ready",
			Help: "The GitRepository's Ready condition: 1 True, 0 False, -1 Unknown.",
		}, labels),
		suspended: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "plumb_source_suspended",
			Help: "1 while the GitRepository is suspended, else 0.",
		}, labels),
		size: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "plumb_source_artifact_size_bytes",
			Help: "Size of the GitRepository's current artifact.",
		}, labels),
		fetches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "plumb_source_fetches_total",
			Help: "Fetches (clones) from the remote; a reconcile whose remote head is unchanged fetches nothing.",
		}, labels),
	}
	reg.MustRegister(m.duration, m.ready, m.suspended, m.size, m.fetches)
	return m
}

func (m *Metrics) observe(obj *sourcev1.GitRepository, start time.Time) {
	if m == nil {
		return
	}
	m.duration.WithLabelValues(obj.Namespace, obj.Name).Observe(time.Since(start).Seconds())
}

func (m *Metrics) record(obj *sourcev1.GitRepository) {
	if m == nil {
		return
	}
	l := []string{obj.Namespace, obj.Name}
	susp := 0.0
	if obj.Spec.Suspend {
		susp = 1
	}
	m.suspended.WithLabelValues(l...).Set(susp)
	ready := -1.0
	for _, c := range obj.Status.Conditions {
		if c.Type == meta.ReadyCondition {
			switch c.Status {
			case metav1.ConditionTrue:
				ready = 1
			case metav1.ConditionFalse:
				ready = 0
			}
		}
	}
	m.ready.WithLabelValues(l...).Set(ready)
	if a := obj.Status.Artifact; a != nil && a.Size != nil {
		m.size.WithLabelValues(l...).Set(float64(*a.Size))
	}
}

func (m *Metrics) fetched(obj *sourcev1.GitRepository) {
	if m != nil {
		m.fetches.WithLabelValues(obj.Namespace, obj.Name).Inc()
	}
}

// forget drops the series of a deleted object.
func (m *Metrics) forget(namespace, name string) {
	if m == nil {
		return
	}
	for _, v := range []interface {
		DeleteLabelValues(...string) bool
	}{m.duration, m.ready, m.suspended, m.size, m.fetches} {
		v.DeleteLabelValues(namespace, name)
	}
}
