package benchkit

import (
	"os"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// An excerpt of kube-apiserver's /metrics, as it exposes its request counter.
const apiserverMetrics = `# HELP apiserver_request_total [STABLE] Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.
# TYPE apiserver_request_total counter
apiserver_request_total{code="200",component="apiserver",dry_run="",group="kustomize.plumb.dev",resource="kustomizations",scope="resource",subresource="status",verb="APPLY",version="v1"} 500
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="configmaps",scope="resource",subresource="",verb="APPLY",version="v1"} 100
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="configmaps",scope="resource",subresource="",verb="APPLY",version="v1"} 20
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="",scope="",subresource="/metrics",verb="GET",version=""} 7
apiserver_request_total_other{code="200"} 99
apiserver_request_duration_seconds_count{verb="GET"} 1000
`

func TestParseCountersReadsOneMetricAndSumsByKind(t *testing.T) {
	g := NewWithT(t)
	before, err := ParseCounters(strings.NewReader(apiserverMetrics), "apiserver_request_total")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(before).To(HaveLen(4), "the other metrics that share the name's prefix are not this one")
	g.Expect(before.Total()).To(Equal(627.0))

	after, err := ParseCounters(strings.NewReader(strings.Replace(apiserverMetrics, "} 500", "} 800", 1)), "apiserver_request_total")
	g.Expect(err).NotTo(HaveOccurred())
	d := after.Sub(before)
	g.Expect(d.Total()).To(Equal(300.0))
	g.Expect(d.ByKind()).To(Equal(map[string]float64{"APPLY kustomizations/status": 300}))
	g.Expect(before.ByKind()).To(Equal(map[string]float64{"APPLY kustomizations/status": 500, "APPLY configmaps": 120}),
		"response codes are summed, and requests without a resource (/metrics) left out")
}

func TestLabelReadsQuotedValuesWithCommas(t *testing.T) {
	g := NewWithT(t)
	set := `code="200",path="/a,b",verb="GET"`
	g.Expect(Label(set, "path")).To(Equal("/a,b"))
	g.Expect(Label(set, "verb")).To(Equal("GET"))
	g.Expect(Label(set, "missing")).To(BeEmpty())
}

func TestReadProcReadsThisProcess(t *testing.T) {
	g := NewWithT(t)
	s, err := ReadProc(os.Getpid())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(s.HWM).To(BeNumerically(">=", s.RSS), "the peak is at least the current resident size")
	g.Expect(s.RSS).To(BeNumerically(">", 0))
	_, err = ReadProc(0)
	g.Expect(err).To(HaveOccurred())
}
