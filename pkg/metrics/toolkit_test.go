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

// Two kinds of one controller share one registry's gotk_* series, told
// apart by the kind label, as in Flux; a deleted object's series go.
func TestToolkitSeriesPerKindOnOneRegistry(t *testing.T) {
	g := NewWithT(t)
	reg := prometheus.NewRegistry()
	repos := NewObject(reg, Spec{Subsystem: "source", Kind: "GitRepository", Condition: "Ready", Toolkit: true})
	charts := NewObject(reg, Spec{Subsystem: "source_helmchart", Kind: "HelmChart", Condition: "Ready", Toolkit: true})
	// A controller that does not own the kind's Ready exports none.
	rendered := NewObject(reg, Spec{Subsystem: "render", Kind: "Kustomization", Condition: "Rendered"})

	repos.Record("apps", "podinfo", []metav1.Condition{
		{Type: "Reconciling", Status: metav1.ConditionTrue},
		{Type: "Ready", Status: metav1.ConditionFalse},
	}, false, nil)
	charts.Record("apps", "podinfo", nil, true, nil)
	rendered.Record("apps", "podinfo", []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue}}, false, nil)

	g.Expect(testutil.CollectAndCompare(reg, strings.NewReader(`
# HELP gotk_reconcile_condition 1 for the status the object's condition has, 0 for the others (Flux's metric).
# TYPE gotk_reconcile_condition gauge
gotk_reconcile_condition{kind="GitRepository",name="podinfo",namespace="apps",status="Deleted",type="Ready"} 0
gotk_reconcile_condition{kind="GitRepository",name="podinfo",namespace="apps",status="False",type="Ready"} 1
gotk_reconcile_condition{kind="GitRepository",name="podinfo",namespace="apps",status="True",type="Ready"} 0
gotk_reconcile_condition{kind="GitRepository",name="podinfo",namespace="apps",status="Unknown",type="Ready"} 0
gotk_reconcile_condition{kind="HelmChart",name="podinfo",namespace="apps",status="Deleted",type="Ready"} 0
gotk_reconcile_condition{kind="HelmChart",name="podinfo",namespace="apps",status="False",type="Ready"} 0
gotk_reconcile_condition{kind="HelmChart",name="podinfo",namespace="apps",status="True",type="Ready"} 0
gotk_reconcile_condition{kind="HelmChart",name="podinfo",namespace="apps",status="Unknown",type="Ready"} 1
# HELP gotk_suspend_status 1 while the object is suspended, else 0 (Flux's metric).
# TYPE gotk_suspend_status gauge
gotk_suspend_status{kind="GitRepository",name="podinfo",namespace="apps"} 0
gotk_suspend_status{kind="HelmChart",name="podinfo",namespace="apps"} 1
`), "gotk_reconcile_condition", "gotk_suspend_status")).To(Succeed())

	start := time.Now()
	repos.Observe("apps", "podinfo", start)
	charts.Observe("apps", "podinfo", start)
	rendered.Observe("apps", "podinfo", start)
	g.Expect(testutil.CollectAndCount(reg, "gotk_reconcile_duration_seconds")).To(Equal(2), "one histogram per kind that exports")

	repos.Forget("apps", "podinfo")
	g.Expect(testutil.CollectAndCount(reg, "gotk_reconcile_condition")).To(Equal(4), "the HelmChart's four statuses are left")
	g.Expect(testutil.CollectAndCount(reg, "gotk_suspend_status")).To(Equal(1))
	g.Expect(testutil.CollectAndCount(reg, "gotk_reconcile_duration_seconds")).To(Equal(1))
}

// The histogram has Flux's buckets, so that quantiles over Flux's and
// Plumb's controllers read alike.
func TestToolkitDurationBucketsAreFlux(t *testing.T) {
	g := NewWithT(t)
	reg := prometheus.NewRegistry()
	NewObject(reg, Spec{Subsystem: "sync", Kind: "Kustomization", Condition: "Ready", Toolkit: true}).Observe("apps", "podinfo", time.Now())
	families, err := reg.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	var bounds []float64
	for _, f := range families {
		if f.GetName() == "gotk_reconcile_duration_seconds" {
			for _, b := range f.GetMetric()[0].GetHistogram().GetBucket() {
				bounds = append(bounds, b.GetUpperBound())
			}
		}
	}
	g.Expect(bounds).To(HaveLen(10))
	g.Expect(bounds[0]).To(BeNumerically("~", 0.01, 1e-9))
	g.Expect(bounds[9]).To(BeNumerically("~", 1800, 1e-6))
}
