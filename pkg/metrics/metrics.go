package metrics

import (
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Spec names one controller's object metrics.
type Spec struct {
	// Subsystem is the second part of every name: plumb_<subsystem>_….
	Subsystem string
	// Kind is the reconciled kind, used in help texts.
	Kind string
	// Condition is the condition type the condition gauge follows.
	Condition string
	// Work and WorkHelp name and describe the work counter; no counter when
	// Work is empty.
	Work, WorkHelp string
	// ConditionOnly keeps one series per object, the condition's, and
	// counts the work over every object of the kind: for a controller
	// that shares its kind with the one that owns it (render-controller,
	// beside sync-controller), whose own series of the same object already
	// say whether it is suspended (gotk_suspend_status) and how large its
	// artifact is (plumb_sync_artifact_size_bytes). Per object they were
	// three of the four series a Kustomization cost render-controller
	// (docs/design/metrics.md, "Plumb's series").
	ConditionOnly bool
	// Toolkit also exports Flux's gotk_* series for Kind (toolkit.go). Set
	// it in the one controller that owns the kind's Ready condition, so
	// that no kind is exported twice: render-controller, which reports
	// Rendered on Kustomizations and HelmReleases, leaves it unset.
	Toolkit bool
}

// Object is the metric set of one kind of reconciled object.
type Object struct {
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
	toolkit *toolkit
}

// NewObject creates the metrics and registers them with reg
// (controller-runtime's metrics.Registry in a binary, so /metrics serves
// them).
func NewObject(reg prometheus.Registerer, s Spec) *Object {
	labels := []string{"namespace", "name"}
	name := func(suffix string) string { return "plumb_" + s.Subsystem + "_" + suffix }
	m := &Object{
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
		m.toolkit = toolkitOn(reg)
	}
	return m
}

// Observe records the duration of a reconcile that started at start.
func (m *Object) Observe(namespace, name string, start time.Time) {
	if m == nil {
		return
	}
	took := time.Since(start).Seconds()
	m.duration.Observe(took)
	if m.toolkit != nil {
		m.toolkit.duration.WithLabelValues(m.spec.Kind, name, namespace).Observe(took)
	}
}

// Record sets the gauges from an object's state.
func (m *Object) Record(namespace, name string, conditions []metav1.Condition, suspended bool, artifactSize *int64) {
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
func (m *Object) Worked(namespace, name string) {
	switch {
	case m == nil:
	case m.workTotal != nil:
		m.workTotal.Inc()
	case m.work != nil:
		m.work.WithLabelValues(namespace, name).Inc()
	}
}

// Forget drops the series of a deleted object.
func (m *Object) Forget(namespace, name string) {
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
