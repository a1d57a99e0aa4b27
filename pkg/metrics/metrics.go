package metrics

import (
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plumb.dev/api/meta"
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

// Object is the metric set of one kind of reconciled object. It keeps one
// record of values per object (record.go) and makes the series of every
// object from them when /metrics is scraped (series.go): Plumb's through
// its own collector, Flux's through the registry's toolkit.
type Object struct {
	spec Spec
	// duration is per controller and kind, not per object: with 14
	// buckets it was most of an object's series (docs/design/metrics.md,
	// "Plumb's series"), and gotk_reconcile_duration_seconds has the
	// duration per object where Flux's dashboards look for it.
	duration prometheus.Histogram
	// steps is how long each named step of a reconcile took
	// (pkg/reconcile's steps, and its status write), per kind: where a
	// reconcile's time goes when the kind's are slow, with a series per
	// step and none per object.
	steps *prometheus.HistogramVec
	// workTotal is the work counter of a ConditionOnly set, over every
	// object of the kind.
	workTotal prometheus.Counter
	// The per-object series' descriptions; suspended and size are nil in
	// a ConditionOnly set, work when there is no counter per object.
	condition, suspended, size, work *prometheus.Desc
	// toolkit is the registry's gotk_* set when Spec.Toolkit, else nil.
	toolkit *toolkit

	// mu guards the map; a record's values have a lock of their own, so
	// that recording an object already known only reads the map, beside
	// other reconciles and a scrape.
	mu      sync.RWMutex
	records map[objectKey]*record
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
		steps: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    name("step_duration_seconds"),
			Help:    "How long each named step of a reconcile of a " + s.Kind + " took, over all of them.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
		}, []string{"step"}),
		condition: prometheus.NewDesc(name(strings.ToLower(s.Condition)),
			"The "+s.Kind+"'s "+s.Condition+" condition: 1 True, 0 False, -1 Unknown.", labels, nil),
		records: map[objectKey]*record{},
	}
	if !s.ConditionOnly {
		m.suspended = prometheus.NewDesc(name("suspended"), "1 while the "+s.Kind+" is suspended, else 0.", labels, nil)
		m.size = prometheus.NewDesc(name("artifact_size_bytes"), "Size of the "+s.Kind+"'s current artifact.", labels, nil)
	}
	reg.MustRegister(m.duration, m.steps, objectCollector{m})
	switch {
	case s.Work == "":
	case s.ConditionOnly:
		m.workTotal = prometheus.NewCounter(prometheus.CounterOpts{Name: name(s.Work), Help: s.WorkHelp + " Over every " + s.Kind + "."})
		reg.MustRegister(m.workTotal)
	default:
		m.work = prometheus.NewDesc(name(s.Work), s.WorkHelp, labels, nil)
	}
	if s.Toolkit {
		m.toolkit = toolkitOn(reg, m)
	}
	return m
}

// Observe records the duration of a reconcile that started at start.
func (m *Object) Observe(namespace, name string, start time.Time) {
	if m == nil {
		return
	}
	m.observe(namespace, name, time.Since(start).Seconds())
}

// ObserveStep records how long one named step of a reconcile took.
func (m *Object) ObserveStep(step string, took time.Duration) {
	if m == nil {
		return
	}
	m.steps.WithLabelValues(step).Observe(took.Seconds())
}

func (m *Object) observe(namespace, name string, took float64) {
	m.duration.Observe(took)
	if m.toolkit != nil {
		m.update(namespace, name, func(r *record) { r.observe(took) })
	}
}

// Record sets the gauges from an object's state.
func (m *Object) Record(namespace, name string, conditions []metav1.Condition, suspended bool, artifactSize *int64) {
	if m == nil {
		return
	}
	value := int8(-1)
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
	ready := noStatus
	if m.toolkit != nil {
		ready = readyStatus(conditions)
	}
	m.update(namespace, name, func(r *record) {
		r.recorded = true
		r.condition = value
		r.suspended = suspended
		r.ready = ready
		if artifactSize != nil && m.size != nil {
			r.hasSize = true
			r.size = float64(*artifactSize)
		}
	})
}

// readyStatus is the index in conditionStatuses of the status of the
// Ready condition: Flux reports an object without one as Unknown, and one
// whose status is none of the three (the CRDs' enum forbids it) with 0
// in each of its four series.
func readyStatus(conditions []metav1.Condition) int8 {
	status := string(metav1.ConditionUnknown)
	for _, c := range conditions {
		if c.Type == meta.ReadyCondition {
			status = string(c.Status)
		}
	}
	for i, s := range conditionStatuses {
		if s == status {
			return int8(i)
		}
	}
	return noStatus
}

// Worked counts one unit of the expensive work.
func (m *Object) Worked(namespace, name string) {
	switch {
	case m == nil:
	case m.workTotal != nil:
		m.workTotal.Inc()
	case m.work != nil:
		m.update(namespace, name, func(r *record) { r.work++ })
	}
}

// Forget drops the series of a deleted object, Plumb's and Flux's.
func (m *Object) Forget(namespace, name string) {
	if m == nil {
		return
	}
	m.mu.Lock()
	delete(m.records, objectKey{namespace, name})
	m.mu.Unlock()
}
