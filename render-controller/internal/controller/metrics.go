package controller

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kustomizev1 "plumb.dev/api/kustomize/v1"
)

// Metrics are render-controller's Prometheus metrics; the package doc lists
// their names.
type Metrics struct {
	duration  *prometheus.HistogramVec
	rendered  *prometheus.GaugeVec
	suspended *prometheus.GaugeVec
	size      *prometheus.GaugeVec
	builds    *prometheus.CounterVec
}

// NewMetrics creates the metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	labels := []string{"namespace", "name"}
	m := &Metrics{
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "plumb_render_reconcile_duration_seconds",
			Help:    "How long one render reconcile of a Kustomization took.",
			Buckets: prometheus.ExponentialBuckets(0.01, 2, 12),
		}, labels),
		rendered: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "plumb_render_rendered",
			Help: "The Kustomization's Rendered condition: 1 True, 0 False, -1 Unknown.",
		}, labels),
		suspended: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "plumb_render_suspended",
			Help: "1 while the Kustomization is suspended, else 0.",
		}, labels),
		size: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "plumb_render_artifact_size_bytes",
			Help: "Size of the Kustomization's current rendered artifact.",
		}, labels),
		builds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "plumb_render_builds_total",
			Help: "kustomize builds run; a reconcile whose inputs are unchanged builds nothing.",
		}, labels),
	}
	reg.MustRegister(m.duration, m.rendered, m.suspended, m.size, m.builds)
	return m
}

func (m *Metrics) observe(obj *kustomizev1.Kustomization, start time.Time) {
	if m == nil {
		return
	}
	m.duration.WithLabelValues(obj.Namespace, obj.Name).Observe(time.Since(start).Seconds())
}

func (m *Metrics) record(obj *kustomizev1.Kustomization) {
	if m == nil {
		return
	}
	l := []string{obj.Namespace, obj.Name}
	susp := 0.0
	if obj.Spec.Suspend {
		susp = 1
	}
	m.suspended.WithLabelValues(l...).Set(susp)
	rendered := -1.0
	for _, c := range obj.Status.Conditions {
		if c.Type == kustomizev1.RenderedCondition {
			switch c.Status {
			case metav1.ConditionTrue:
				rendered = 1
			case metav1.ConditionFalse:
				rendered = 0
			}
		}
	}
	m.rendered.WithLabelValues(l...).Set(rendered)
	if a := obj.Status.RenderedArtifact; a != nil && a.Size != nil {
		m.size.WithLabelValues(l...).Set(float64(*a.Size))
	}
}

func (m *Metrics) built(obj *kustomizev1.Kustomization) {
	if m != nil {
		m.builds.WithLabelValues(obj.Namespace, obj.Name).Inc()
	}
}

// forget drops the series of a deleted object.
func (m *Metrics) forget(namespace, name string) {
	if m == nil {
		return
	}
	for _, v := range []interface {
		DeleteLabelValues(...string) bool
	}{m.duration, m.rendered, m.suspended, m.size, m.builds} {
		v.DeleteLabelValues(namespace, name)
	}
}
