package benchkit

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

func TestReadPssReadsThisProcess(t *testing.T) {
	g := NewWithT(t)
	pss, err := ReadPss(os.Getpid())
	g.Expect(err).NotTo(HaveOccurred())
	p, err := ReadProc(os.Getpid())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(pss).To(BeNumerically(">", 0))
	g.Expect(pss).To(BeNumerically("<=", p.RSS+1024), "Pss divides the resident pages, it never exceeds them by more than what moved between the reads")
}

func TestMemSamplerCountsTheChildren(t *testing.T) {
	g := NewWithT(t)
	child := exec.Command("sleep", "30")
	g.Expect(child.Start()).To(Succeed())
	defer func() { _ = child.Process.Kill(); _ = child.Wait() }()
	g.Eventually(func() error { _, err := ReadPss(child.Process.Pid); return err }).Should(Succeed(), "the child is running")

	s := NewMemSampler(map[string]func() int{
		"me":   os.Getpid,
		"none": func() int { return 0 },
	}, 10*time.Millisecond)
	s.Start(context.Background())
	g.Eventually(s.Samples).Should(BeNumerically(">=", 3))
	s.Stop()

	peak, at := s.Peak("me")
	g.Expect(peak).To(BeNumerically(">", 0))
	g.Expect(at["me"].Workers).To(BeNumerically(">=", 1), "the sleep started here is a descendant")
	g.Expect(at["me"].PSS).To(BeNumerically(">", at["me"].Self), "the descendants' Pss is added to the process's own")
	g.Expect(at["me"].Anon).To(BeNumerically(">", 0))
	g.Expect(at["me"].Anon).To(BeNumerically("<", at["me"].PSS), "a Go test binary maps its own file too")
	g.Expect(at).NotTo(HaveKey("none"), "a process not running has no sample")
	g.Expect(s.WorkerHWM("me")).To(BeNumerically(">", 0))
	g.Expect(s.CPU("me")).To(BeNumerically(">=", 0))
	g.Expect(s.CPU("none")).To(BeZero())
	both, _ := s.Peak("me", "none")
	g.Expect(both).To(Equal(peak))
}

// A process's tree CPU includes what its reaped children used: the shell
// here only waits while its child counts, so nearly all of its tree's time
// is its child's.
func TestTreeCPUCountsTheReapedChildren(t *testing.T) {
	g := NewWithT(t)
	done := filepath.Join(t.TempDir(), "done")
	child := exec.Command("/bin/sh", "-c",
		`/bin/sh -c 'i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done'; touch "$0"; exec sleep 60`, done)
	g.Expect(child.Start()).To(Succeed())
	defer func() { _ = child.Process.Kill(); _ = child.Wait() }()
	g.Eventually(func() error { _, err := os.Stat(done); return err }).WithTimeout(5*time.Minute).Should(Succeed(), "the counting child ended")

	own, err := ReadProc(child.Process.Pid)
	g.Expect(err).NotTo(HaveOccurred())
	tree := treeCPU(child.Process.Pid)
	g.Expect(tree).To(BeNumerically(">=", own.CPU+50*time.Millisecond), "the counting child's CPU is in its parent's cutime and cstime")
	g.Expect(treeCPU(-1)).To(BeZero(), "a process that is not there")
}
