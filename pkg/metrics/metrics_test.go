package metrics

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestObjectMetrics(t *testing.T) {
	g := NewWithT(t)
	reg := prometheus.NewRegistry()
	m := NewObject(reg, Spec{Subsystem: "test", Kind: "Thing", Condition: "Ready", Work: "fetches_total", WorkHelp: "Fetches."})

	size := int64(42)
	m.Record("ns", "a", []metav1.Condition{{Type: "Ready", Status: metav1.ConditionFalse}}, true, &size)
	m.Record("ns", "b", nil, false, nil)
	m.Observe("ns", "a", time.Now())
	m.Observe("ns", "b", time.Now())
	m.Worked("ns", "a")
	m.Worked("ns", "a")

	g.Expect(testutil.CollectAndCompare(reg, strings.NewReader(`
# HELP plumb_test_ready The Thing's Ready condition: 1 True, 0 False, -1 Unknown.
# TYPE plumb_test_ready gauge
plumb_test_ready{name="a",namespace="ns"} 0
plumb_test_ready{name="b",namespace="ns"} -1
# HELP plumb_test_suspended 1 while the Thing is suspended, else 0.
# TYPE plumb_test_suspended gauge
plumb_test_suspended{name="a",namespace="ns"} 1
plumb_test_suspended{name="b",namespace="ns"} 0
# HELP plumb_test_artifact_size_bytes Size of the Thing's current artifact.
# TYPE plumb_test_artifact_size_bytes gauge
plumb_test_artifact_size_bytes{name="a",namespace="ns"} 42
# HELP plumb_test_fetches_total Fetches.
# TYPE plumb_test_fetches_total counter
plumb_test_fetches_total{name="a",namespace="ns"} 2
`), "plumb_test_ready", "plumb_test_suspended", "plumb_test_artifact_size_bytes", "plumb_test_fetches_total")).To(Succeed())
	// One histogram for the kind, both objects' reconciles in it: no
	// series per object (gotk_reconcile_duration_seconds has those).
	g.Expect(testutil.CollectAndCount(reg, "plumb_test_reconcile_duration_seconds")).To(Equal(1))
	g.Expect(histogramCount(g, reg, "plumb_test_reconcile_duration_seconds")).To(BeEquivalentTo(2))

	m.Forget("ns", "a")
	g.Expect(testutil.CollectAndCount(reg, "plumb_test_ready")).To(Equal(1))
	g.Expect(testutil.CollectAndCount(reg, "plumb_test_fetches_total")).To(Equal(0))
	g.Expect(histogramCount(g, reg, "plumb_test_reconcile_duration_seconds")).To(BeEquivalentTo(2), "a deleted object's reconciles stay in the kind's histogram")

	var nilMetrics *Object
	nilMetrics.Record("ns", "a", nil, false, nil) // a nil set records nothing and does not panic
}

// A ConditionOnly set keeps one series per object, the condition's, and
// counts the work of every object in one counter.
func TestConditionOnlyMetrics(t *testing.T) {
	g := NewWithT(t)
	reg := prometheus.NewRegistry()
	m := NewObject(reg, Spec{Subsystem: "test", Kind: "Thing", Condition: "Rendered", Work: "builds_total", WorkHelp: "Builds.", ConditionOnly: true})

	size := int64(42)
	m.Record("ns", "a", []metav1.Condition{{Type: "Rendered", Status: metav1.ConditionTrue}}, true, &size)
	m.Record("ns", "b", nil, false, nil)
	m.Worked("ns", "a")
	m.Worked("ns", "b")

	g.Expect(testutil.CollectAndCompare(reg, strings.NewReader(`
# HELP plumb_test_rendered The Thing's Rendered condition: 1 True, 0 False, -1 Unknown.
# TYPE plumb_test_rendered gauge
plumb_test_rendered{name="a",namespace="ns"} 1
plumb_test_rendered{name="b",namespace="ns"} -1
# HELP plumb_test_builds_total Builds. Over every Thing.
# TYPE plumb_test_builds_total counter
plumb_test_builds_total 2
`), "plumb_test_rendered", "plumb_test_builds_total", "plumb_test_suspended", "plumb_test_artifact_size_bytes")).To(Succeed(), "no suspended or artifact size series, no object labels on the counter")

	m.Forget("ns", "a")
	g.Expect(testutil.CollectAndCount(reg, "plumb_test_rendered")).To(Equal(1))
	g.Expect(testutil.ToFloat64(m.workTotal)).To(Equal(2.0), "a deleted object's builds stay counted")
}

// histogramCount returns the sample count of the one histogram named name.
func histogramCount(g Gomega, reg *prometheus.Registry, name string) uint64 {
	families, err := reg.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() == name {
			g.Expect(f.GetMetric()).To(HaveLen(1))
			g.Expect(f.GetMetric()[0].GetLabel()).To(BeEmpty(), "no object labels")
			return f.GetMetric()[0].GetHistogram().GetSampleCount()
		}
	}
	g.Expect(name).To(BeEmpty(), "no histogram of that name")
	return 0
}
