package main

import (
	"os/exec"
	"testing"

	. "github.com/onsi/gomega"
)

// The memory figures are KiB, as /proc/<pid>/status prints them.
func TestStatusReadsTheMemoryInKiB(t *testing.T) {
	g := NewWithT(t)
	child := exec.Command("sleep", "60")
	g.Expect(child.Start()).To(Succeed())
	defer func() { _ = child.Process.Kill(); _ = child.Wait() }()
	p := &process{cmd: child}
	var rss, hwm int64
	g.Eventually(func() (int64, error) {
		var err error
		rss, hwm, err = p.memory()
		return rss, err
	}).Should(BeNumerically(">", 100), "a sleep's resident set is a few hundred KiB at least, not a few, once its loader has run")
	g.Expect(rss).To(BeNumerically("<", 100*1024), "… and not tens of MiB: KiB, not bytes")
	g.Expect(hwm).To(BeNumerically(">=", rss))
	// The parts are compared with the total of the same read: the child's
	// loader may still be mapping pages between two reads.
	s, err := p.status()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(kib(s.RssAnon) + kib(s.RssFile)).To(BeNumerically("<=", kib(s.VmRSS)+kib(s.RssShmem)+1))
}
