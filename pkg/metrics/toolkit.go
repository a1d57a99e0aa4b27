package metrics

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
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

// deletedStatus is the fourth status of gotk_reconcile_condition beside
// True, False and Unknown. Flux's alert rule and dashboards of the
// gotk_reconcile_condition era add or subtract the status="Deleted" series
// of each object; without it their expressions come out empty (an alert
// that never fires). A live object's Deleted series is 0; a deleted
// object's series are all removed, as Flux does now, rather than kept at
// Deleted=1 forever.
const deletedStatus = "Deleted"

var conditionStatuses = []string{string(metav1.ConditionTrue), string(metav1.ConditionFalse), string(metav1.ConditionUnknown), deletedStatus}

// toolkit is the gotk_* set of one registry, shared by every kind a
// controller reconciles: the kind is a label, as in Flux.
type toolkit struct {
	duration  *prometheus.HistogramVec
	condition *prometheus.GaugeVec
	suspend   *prometheus.GaugeVec
}

// toolkitOn returns reg's gotk_* set, registering it with the first kind
// and reusing it for the next (a controller of several kinds creates one
// Object per kind on one registry).
func toolkitOn(reg prometheus.Registerer) *toolkit {
	objectLabels := []string{"kind", "name", "namespace"}
	return &toolkit{
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

// record sets the Ready condition's and the suspension's series of one
// object: Flux reports the Ready condition, and an object without one as
// Unknown.
func (t *toolkit) record(kind, namespace, name string, conditions []metav1.Condition, suspended bool) {
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

func (t *toolkit) forget(kind, namespace, name string) {
	labels := prometheus.Labels{"kind": kind, "name": name, "namespace": namespace}
	t.duration.Delete(labels)
	t.suspend.Delete(labels)
	t.condition.DeletePartialMatch(labels)
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
