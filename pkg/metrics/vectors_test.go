package metrics

// The implementation before issue 45 item 4, with client_golang's vectors:
// the reference the series made at scrape time are compared with
// (TestSeriesAreTheVectorsSeries), and the baseline of the benchmarks of
// retained heap and scrapes (BenchmarkRetainedHeap, BenchmarkScrape).

import (
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plumb.dev/api/meta"
)

// vectorObject is Object as it was, with a vector per series name.
type vectorObject struct {
	spec Spec
	// duration is per controller and kind, not per object: with 14
	// buckets it was most of an object's series (docs/design/metrics.md,
	// "Plumb's series"), and gotk_reconcile_duration_seconds has the
	// duration per object where Flux's dashboards look for it.
	duration  prometheus.Histogram
	condition *prometheus.GaugeVec
	suspended *prometheus.GaugeVec
	size      *prometheus.GaugeVec
	work      *prometheus.CounterVec
	// workTotal is the work counter of a ConditionOnly set, over every
	// object of the kind.
	workTotal prometheus.Counter
	// toolkit is the registry's gotk_* set when Spec.Toolkit, else nil.
	toolkit *vectorToolkit
}

// newVectorObject creates the metrics and registers them with reg
// (controller-runtime's metrics.Registry in a binary, so /metrics serves
// them).
func newVectorObject(reg prometheus.Registerer, s Spec) *vectorObject {
	labels := []string{"namespace", "name"}
	name := func(suffix string) string { return "plumb_" + s.Subsystem + "_" + suffix }
	m := &vectorObject{
		spec: s,
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    name("reconcile_duration_seconds"),
			Help:    "How long one reconcile of a " + s.Kind + " took, over all of them.",
			Buckets: prometheus.ExponentialBuckets(0.01, 2, 14),
		}),
		condition: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: name(strings.ToLower(s.Condition)),
			Help: "The " + s.Kind + "'s " + s.Condition + " condition: 1 True, 0 False, -1 Unknown.",
		}, labels),
	}
	reg.MustRegister(m.duration, m.condition)
	if !s.ConditionOnly {
		m.suspended = prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: name("suspended"),
			Help: "1 while the " + s.Kind + " is suspended, else 0.",
		}, labels)
		m.size = prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: name("artifact_size_bytes"),
			Help: "Size of the " + s.Kind + "'s current artifact.",
		}, labels)
		reg.MustRegister(m.suspended, m.size)
	}
	switch {
	case s.Work == "":
	case s.ConditionOnly:
		m.workTotal = prometheus.NewCounter(prometheus.CounterOpts{Name: name(s.Work), Help: s.WorkHelp + " Over every " + s.Kind + "."})
		reg.MustRegister(m.workTotal)
	default:
		m.work = prometheus.NewCounterVec(prometheus.CounterOpts{Name: name(s.Work), Help: s.WorkHelp}, labels)
		reg.MustRegister(m.work)
	}
	if s.Toolkit {
		m.toolkit = vectorToolkitOn(reg)
	}
	return m
}

// Observe records the duration of a reconcile that started at start.
func (m *vectorObject) Observe(namespace, name string, start time.Time) {
	if m == nil {
		return
	}
	m.observe(namespace, name, time.Since(start).Seconds())
}

func (m *vectorObject) observe(namespace, name string, took float64) {
	m.duration.Observe(took)
	if m.toolkit != nil {
		m.toolkit.duration.WithLabelValues(m.spec.Kind, name, namespace).Observe(took)
	}
}

// Record sets the gauges from an object's state.
func (m *vectorObject) Record(namespace, name string, conditions []metav1.Condition, suspended bool, artifactSize *int64) {
	if m == nil {
		return
	}
	if m.suspended != nil {
		m.suspended.WithLabelValues(namespace, name).Set(boolValue(suspended))
	}
	if m.toolkit != nil {
		m.toolkit.record(m.spec.Kind, namespace, name, conditions, suspended)
	}
	value := -1.0
	for _, c := range conditions {
		if c.Type != m.spec.Condition {
			continue
		}
		switch c.Status {
		case metav1.ConditionTrue:
			value = 1
		case metav1.ConditionFalse:
			value = 0
		}
	}
	m.condition.WithLabelValues(namespace, name).Set(value)
	if artifactSize != nil && m.size != nil {
		m.size.WithLabelValues(namespace, name).Set(float64(*artifactSize))
	}
}

// Worked counts one unit of the expensive work.
func (m *vectorObject) Worked(namespace, name string) {
	switch {
	case m == nil:
	case m.workTotal != nil:
		m.workTotal.Inc()
	case m.work != nil:
		m.work.WithLabelValues(namespace, name).Inc()
	}
}

// Forget drops the series of a deleted object.
func (m *vectorObject) Forget(namespace, name string) {
	if m == nil {
		return
	}
	m.condition.DeleteLabelValues(namespace, name)
	if m.suspended != nil {
		m.suspended.DeleteLabelValues(namespace, name)
		m.size.DeleteLabelValues(namespace, name)
	}
	if m.work != nil {
		m.work.DeleteLabelValues(namespace, name)
	}
	if m.toolkit != nil {
		m.toolkit.forget(m.spec.Kind, namespace, name)
	}
}

// toolkit is the gotk_* set of one registry, shared by every kind a
// controller reconciles: the kind is a label, as in Flux.
type vectorToolkit struct {
	duration  *prometheus.HistogramVec
	condition *prometheus.GaugeVec
	suspend   *prometheus.GaugeVec
}

// toolkitOn returns reg's gotk_* set, registering it with the first kind
// and reusing it for the next (a controller of several kinds creates one
// Object per kind on one registry).
func vectorToolkitOn(reg prometheus.Registerer) *vectorToolkit {
	objectLabels := []string{"kind", "name", "namespace"}
	return &vectorToolkit{
		duration: register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: toolkitDuration,
			Help: "How long one reconcile of a Plumb object took (Flux's metric).",
			// Flux's buckets: ten, spread exponentially from 10 ms to 30 min,
			// so that a dashboard's quantiles read alike for Flux and Plumb.
			Buckets: prometheus.ExponentialBucketsRange(10e-3, 1800, 10),
		}, objectLabels)),
		condition: register(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: toolkitCondition,
			Help: "1 for the status the object's condition has, 0 for the others (Flux's metric).",
		}, append(objectLabels, "type", "status"))),
		suspend: register(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: toolkitSuspend,
			Help: "1 while the object is suspended, else 0 (Flux's metric).",
		}, objectLabels)),
	}
}

// record sets the Ready condition's and the suspension's series of one
// object: Flux reports the Ready condition, and an object without one as
// Unknown.
func (t *vectorToolkit) record(kind, namespace, name string, conditions []metav1.Condition, suspended bool) {
	status := string(metav1.ConditionUnknown)
	for _, c := range conditions {
		if c.Type == meta.ReadyCondition {
			status = string(c.Status)
		}
	}
	for _, s := range conditionStatuses {
		v := 0.0
		if s == status {
			v = 1
		}
		t.condition.WithLabelValues(kind, name, namespace, meta.ReadyCondition, s).Set(v)
	}
	t.suspend.WithLabelValues(kind, name, namespace).Set(boolValue(suspended))
}

func (t *vectorToolkit) forget(kind, namespace, name string) {
	labels := prometheus.Labels{"kind": kind, "name": name, "namespace": namespace}
	t.duration.Delete(labels)
	t.suspend.Delete(labels)
	t.condition.DeletePartialMatch(labels)
}
