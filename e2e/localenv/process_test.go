package localenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// A supervised process that exits is started again after 1s, then 2s, and
// its status says how often and how it last exited; Stop ends it for good.
func TestASupervisedProcessIsRestartedWithBackoff(t *testing.T) {
	g := NewWithT(t)
	p := &Process{Name: "crasher", Path: "/bin/sh", Args: []string{"-c", "exit 3"},
		LogPath: filepath.Join(t.TempDir(), "crasher.log"), Supervised: true}
	began := time.Now()
	g.Expect(p.Start()).To(Succeed())
	g.Eventually(func() int { _, n, _ := p.Status(); return n }).WithTimeout(10 * time.Second).Should(BeNumerically(">=", 2))
	// Exits at ~0s and ~1s; the second restart comes after 1s + 2s.
	g.Expect(time.Since(began)).To(BeNumerically(">=", 900*time.Millisecond))
	_, _, last := p.Status()
	g.Expect(last).To(ContainSubstring("exit status 3"))
	g.Expect(p.Stop(time.Second)).To(Succeed())
	_, n, _ := p.Status()
	time.Sleep(2500 * time.Millisecond)
	_, after, _ := p.Status()
	g.Expect(after).To(BeNumerically("<=", n+1), "restarted after Stop")
	g.Expect(p.Running()).To(BeFalse())
	g.Expect(strings.Count(Tail(p.LogPath, 100), "starting")).To(BeNumerically(">=", 3))
}

// Start during the backoff starts the process at once, and the supervisor
// does not start a second copy.
func TestStartDuringTheBackoffStartsAtOnce(t *testing.T) {
	g := NewWithT(t)
	p := &Process{Name: "sleeper", Path: "/bin/sh", Args: []string{"-c", "sleep 30"},
		LogPath: filepath.Join(t.TempDir(), "sleeper.log"), Supervised: true}
	g.Expect(p.Start()).To(Succeed())
	t.Cleanup(func() { _ = p.Stop(time.Second) })
	g.Expect(p.Kill()).To(Succeed())
	g.Expect(p.Running()).To(BeFalse())
	g.Expect(p.Start()).To(Succeed())
	g.Expect(p.Running()).To(BeTrue())
	pid := p.Pid()
	time.Sleep(1500 * time.Millisecond)
	g.Expect(p.Pid()).To(Equal(pid))
	g.Expect(p.Running()).To(BeTrue())
}

// ChildPids lists a process's own children, not their children.
func TestChildPidsListsOnlyTheChildren(t *testing.T) {
	g := NewWithT(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	// echo is the shell's own: the sleep is its only child.
	parent := exec.Command("/bin/sh", "-c", `sleep 60 & echo $! >"$0.tmp" && mv "$0.tmp" "$0"; wait`, pidFile)
	g.Expect(parent.Start()).To(Succeed())
	defer func() { _ = parent.Process.Kill(); _ = parent.Wait() }()
	var sleepPid int
	g.Eventually(func() error {
		data, err := os.ReadFile(pidFile)
		if err == nil {
			sleepPid, err = strconv.Atoi(strings.TrimSpace(string(data)))
		}
		return err
	}).WithTimeout(time.Minute).Should(Succeed())
	defer func() { _ = syscall.Kill(sleepPid, syscall.SIGKILL) }()

	mine, err := ChildPids(os.Getpid())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(mine).To(ContainElement(parent.Process.Pid))
	g.Expect(mine).NotTo(ContainElement(sleepPid))
	g.Eventually(func() ([]int, error) { return ChildPids(parent.Process.Pid) }).Should(Equal([]int{sleepPid}), "mv has been reaped; the sleep is left")
}
