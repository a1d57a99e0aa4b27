package benchkit

import (
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/procfs"

	"plumb.dev/pkg/benchfig"
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

// A busy child's CPU time read from /proc is what the kernel reports when
// the child is reaped: the same unit, short of it by less than the clock
// ticks /proc truncates to. The child is stopped before the read so it
// uses nothing between the read and its end.
func TestReadProcReadsABusyChildsCPU(t *testing.T) {
	g := NewWithT(t)
	child := busyChild(t, 300*time.Millisecond)

	g.Expect(child.Process.Signal(syscall.SIGSTOP)).To(Succeed())
	g.Eventually(func() (string, error) { return procState(child.Process.Pid) }).Should(Equal("T"))
	s, err := ReadProc(child.Process.Pid)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(s.RSS).To(BeNumerically(">", 0))
	g.Expect(child.Process.Kill()).To(Succeed())
	_ = child.Wait()
	reaped := child.ProcessState.UserTime() + child.ProcessState.SystemTime()
	g.Expect(s.CPU).To(BeNumerically("<=", reaped))
	g.Expect(s.CPU).To(BeNumerically(">", reaped-3*benchfig.Ticks(1)), "utime and stime are each truncated to a tick, and dying costs little")
}

// A process tree's CPU includes its running children's: a controller's
// render workers are its children, and their renders its work.
func TestTreeCPUCountsRunningChildren(t *testing.T) {
	g := NewWithT(t)
	child := busyChild(t, 200*time.Millisecond)

	own, err := ReadProc(os.Getpid())
	g.Expect(err).NotTo(HaveOccurred())
	busy, err := ReadProc(child.Process.Pid)
	g.Expect(err).NotTo(HaveOccurred())
	children, err := processTree()
	g.Expect(err).NotTo(HaveOccurred())
	// Each counter only grows, and the reads were in this order.
	g.Expect(TreeCPU(os.Getpid(), children)).To(BeNumerically(">=", own.CPU+busy.CPU), "this process's time and its busy child's")
}

// busyChild starts a child that spins until the test ends, and returns
// once it has used at least atLeast of CPU.
func busyChild(t *testing.T, atLeast time.Duration) *exec.Cmd {
	t.Helper()
	g := NewWithT(t)
	child := exec.Command("/bin/sh", "-c", "while :; do :; done")
	g.Expect(child.Start()).To(Succeed())
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })
	g.Eventually(func() (time.Duration, error) {
		s, err := ReadProc(child.Process.Pid)
		return s.CPU, err
	}).WithTimeout(time.Minute).Should(BeNumerically(">=", atLeast))
	return child
}

// procState is a process's state letter (R, S, T, Z…).
func procState(pid int) (string, error) {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return "", err
	}
	s, err := p.Stat()
	return s.State, err
}
