package benchfig

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/procfs"
)

// ProcessCPU sums the CPU time of the processes chosen, in the unit the
// kernel reports when it reaps them: a busy child, stopped before the
// read, is short of its final figure by less than /proc's truncation to
// clock ticks.
func TestProcessCPUReadsABusyChild(t *testing.T) {
	g := NewWithT(t)
	child := exec.Command("/bin/sh", "-c", "while :; do :; done")
	g.Expect(child.Start()).To(Succeed())
	defer func() { _ = child.Process.Kill(); _ = child.Wait() }()
	pid := child.Process.Pid
	only := func(p, ppid int) bool { return p == pid }
	g.Eventually(func() (time.Duration, error) { return ProcessCPU(only) }).WithTimeout(time.Minute).
		Should(BeNumerically(">=", 300*time.Millisecond))

	g.Expect(child.Process.Signal(syscall.SIGSTOP)).To(Succeed())
	g.Eventually(func() (string, error) {
		p, err := procfs.NewProc(pid)
		if err != nil {
			return "", err
		}
		s, err := p.Stat()
		return s.State, err
	}).Should(Equal("T"))
	cpu, err := ProcessCPU(only)
	g.Expect(err).NotTo(HaveOccurred())
	children, err := ProcessCPU(func(_, ppid int) bool { return ppid == os.Getpid() })
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(children).To(BeNumerically(">=", cpu), "the busy loop is a child of this process")
	g.Expect(child.Process.Kill()).To(Succeed())
	_ = child.Wait()
	reaped := child.ProcessState.UserTime() + child.ProcessState.SystemTime()
	g.Expect(cpu).To(BeNumerically("<=", reaped))
	g.Expect(cpu).To(BeNumerically(">", reaped-30*time.Millisecond), "utime and stime are each truncated to a 10 ms tick, and dying costs little")
}

// The steal is a share of all the cores' time between two readings, and a
// failed reading says so rather than print a share of nothing.
func TestStealSince(t *testing.T) {
	g := NewWithT(t)
	before := MachineCPU{Total: 1000, Steal: 40}
	g.Expect(MachineCPU{Total: 1200, Steal: 45}.StealSince(before)).To(Equal("2.5 % stolen"))
	g.Expect(MachineCPU{Total: 1200, Steal: 45}.StealSince(MachineCPU{})).To(Equal("?"), "no reading before")
	g.Expect(MachineCPU{}.StealSince(before)).To(Equal("?"), "no reading after")

	now := ReadMachineCPU()
	g.Expect(now.Total).To(BeNumerically(">", 0), "/proc/stat is read on Linux")
	g.Expect(now.Steal).To(BeNumerically("<=", now.Total))
}
