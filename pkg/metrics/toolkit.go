package metrics

import (
	"errors"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plumb.dev/api/meta"
)

// The names, labels and buckets of Flux's per-object metrics (the GitOps
// Toolkit's, hence gotk_): what Flux's Grafana dashboards and alert rules
// query. docs/design/metrics.md says which controller exports which kind.
const (
	toolkitDuration  = "gotk_reconcile_duration_seconds"
	toolkitCondition = "gotk_reconcile_condition"
	toolkitSuspend   = "gotk_suspend_status"
)

// toolkitBuckets are Flux's buckets: ten, spread exponentially from 10 ms
// to 30 min, so that a dashboard's quantiles read alike for Flux and Plumb.
var toolkitBuckets = [10]float64(prometheus.ExponentialBucketsRange(10e-3, 1800, 10))

// deletedStatus is the fourth status of gotk_reconcile_condition beside
// True, False and Unknown. Flux's alert rule and dashboards of the
// gotk_reconcile_condition era add or subtract the status="Deleted" series
// of each object; without it their expressions come out empty (an alert
// that never fires). A live object's Deleted series is 0; a deleted
// object's series are all removed, as Flux does now, rather than kept at
// Deleted=1 forever.
const deletedStatus = "Deleted"

var conditionStatuses = [...]string{string(metav1.ConditionTrue), string(metav1.ConditionFalse), string(metav1.ConditionUnknown), deletedStatus}

// The label pairs every object's gotk_reconcile_condition series share:
// type="Ready", and one status="…" for each of conditionStatuses.
var (
	readyType     = meta.ReadyCondition
	readyTypePair = &dto.LabelPair{Name: &typeLabel, Value: &readyType}
	statusPairs   = func() (pairs [len(conditionStatuses)]*dto.LabelPair) {
		for i := range conditionStatuses {
			pairs[i] = &dto.LabelPair{Name: &statusLabel, Value: &conditionStatuses[i]}
		}
		return pairs
	}()
)

// toolkit is the gotk_* collector of one registry, shared by every kind a
// controller reconciles: the kind is a label, as in Flux. It makes each
// kind's series from that kind's records.
type toolkit struct {
	duration, condition, suspend *prometheus.Desc

	mu    sync.Mutex
	kinds []toolkitKind
}

// toolkitKind is one kind's Object and its kind="…" label pair.
type toolkitKind struct {
	m    *Object
	pair *dto.LabelPair
}

// toolkitOn returns reg's gotk_* collector with m's kind added,
// registering the collector with the first kind and reusing it for the
// next (a controller of several kinds creates one Object per kind on one
// registry).
func toolkitOn(reg prometheus.Registerer, m *Object) *toolkit {
	objectLabels := []string{"kind", "name", "namespace"}
	t := register(reg, &toolkit{
		duration: prometheus.NewDesc(toolkitDuration,
			"How long one reconcile of a Plumb object took (Flux's metric).", objectLabels, nil),
		condition: prometheus.NewDesc(toolkitCondition,
			"1 for the status the object's condition has, 0 for the others (Flux's metric).",
			append(objectLabels, "type", "status"), nil),
		suspend: prometheus.NewDesc(toolkitSuspend,
			"1 while the object is suspended, else 0 (Flux's metric).", objectLabels, nil),
	})
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, k := range t.kinds {
		if k.m.spec.Kind == m.spec.Kind {
			// Two records of one object would make its series twice, which
			// fails the whole scrape.
			panic("metrics: the gotk_* series of " + m.spec.Kind + " are already exported on this registry")
		}
	}
	t.kinds = append(t.kinds, toolkitKind{m: m, pair: &dto.LabelPair{Name: &kindLabel, Value: &m.spec.Kind}})
	return t
}

// register registers c with reg, or returns the equal collector registered
// before.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	err := reg.Register(c)
	if err == nil {
		return c
	}
	if are, ok := errors.AsType[prometheus.AlreadyRegisteredError](err); ok {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing
		}
	}
	panic(err)
}

func (t *toolkit) Describe(ch chan<- *prometheus.Desc) {
	ch <- t.duration
	ch <- t.condition
	ch <- t.suspend
}

// Collect makes the series of every object of every kind: its duration
// histogram once observed; once recorded, its suspension and the four
// statuses of its Ready condition.
func (t *toolkit) Collect(ch chan<- prometheus.Metric) {
	t.mu.Lock()
	kinds := t.kinds
	t.mu.Unlock()
	for _, k := range kinds {
		for _, r := range k.m.snapshot() {
			v := r.values()
			p := namePairs(r)
			object := []*dto.LabelPair{k.pair, &p[0], &p[1]}
			if v.observed {
				ch <- newHistogram(t.duration, object, &v.durations)
			}
			if !v.recorded {
				continue
			}
			gauges := new([1 + len(conditionStatuses)]gauge)
			gauges[0].desc, gauges[0].labels, gauges[0].value = t.suspend, object, boolValue(v.suspended)
			ch <- &gauges[0]
			// One array for the four series' labels, sorted by name: kind,
			// name, namespace, status, type.
			const n = 5
			labels := new([len(conditionStatuses) * n]*dto.LabelPair)
			for i, status := range statusPairs {
				l := labels[i*n : (i+1)*n : (i+1)*n]
				copy(l, object)
				l[3], l[4] = status, readyTypePair
				g := &gauges[1+i]
				g.desc, g.labels = t.condition, l
				if int8(i) == v.ready {
					g.value = 1
				}
				ch <- g
			}
		}
	}
}
