package benchkit

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"
)

// allowedCPUs reads a task's Cpus_allowed_list from /proc.
func allowedCPUs(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("%s has no Cpus_allowed_list", path)
	return ""
}

func TestPinTreeConfinesEveryThreadAndChild(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("needs two CPUs to tell a pinned process from one that is not")
	}
	// A shell whose two children sleep: both are running when the tree is
	// pinned, and the second is skipped, as the bench skips the control
	// plane among its children.
	cmd := exec.Command("sh", "-c", "sleep 30 & sleep 31 & wait")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	var kids []int
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && len(kids) < 2; time.Sleep(10 * time.Millisecond) {
		children, err := processTree()
		if err != nil {
			t.Fatal(err)
		}
		kids = children[cmd.Process.Pid]
	}
	if len(kids) < 2 {
		t.Fatalf("the shell's children never started: %v", kids)
	}
	pinned, skipped := kids[0], kids[1]
	last := CPUSet{runtime.NumCPU() - 1}
	before := allowedCPUs(t, fmt.Sprintf("/proc/%d/status", skipped))
	if got := allowedCPUs(t, fmt.Sprintf("/proc/%d/status", pinned)); got == last.String() || before == last.String() {
		t.Fatalf("the children are on CPU %s before the pinning: the test would prove nothing", last)
	}
	if err := PinTree(cmd.Process.Pid, last, skipped); err != nil {
		t.Fatal(err)
	}
	for _, pid := range []int{cmd.Process.Pid, pinned} {
		tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		if err != nil {
			t.Fatal(err)
		}
		for _, task := range tasks {
			if got := allowedCPUs(t, fmt.Sprintf("/proc/%d/task/%s/status", pid, task.Name())); got != last.String() {
				t.Errorf("thread %s of process %d may run on CPUs %s, want %s", task.Name(), pid, got, last)
			}
		}
	}
	if got := allowedCPUs(t, fmt.Sprintf("/proc/%d/status", skipped)); got != before {
		t.Errorf("the skipped child was moved from CPUs %s to %s", before, got)
	}
}

func TestParseCPUSet(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("needs two CPUs")
	}
	set, err := ParseCPUSet("0")
	if err != nil {
		t.Fatal(err)
	}
	rest, err := set.Rest()
	if err != nil {
		t.Fatal(err)
	}
	if len(rest) != runtime.NumCPU()-1 || rest[0] != 1 {
		t.Errorf("the rest of CPU 0 is %v", rest)
	}
	for _, bad := range []string{"", "x", "-1", fmt.Sprint(runtime.NumCPU()), "0,0"} {
		if _, err := ParseCPUSet(bad); err == nil {
			t.Errorf("%q was taken", bad)
		}
	}
	all := CPUSet{}
	for n := range runtime.NumCPU() {
		all = append(all, n)
	}
	if _, err := all.Rest(); err == nil {
		t.Error("all CPUs left a rest")
	}
}
