package benchkit

import (
	"fmt"
	"maps"
	"os/exec"
	"runtime"
	"testing"
	"time"

	"github.com/prometheus/procfs"
)

// allowedCPUs is the CPUs each thread of a process may run on (its
// Cpus_allowed_list), one entry per thread.
func allowedCPUs(t *testing.T, pid int) map[int]string {
	t.Helper()
	threads, err := procfs.AllThreads(pid)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]string{}
	for _, th := range threads {
		st, err := th.NewStatus()
		if err != nil {
			t.Fatal(err)
		}
		out[th.PID] = fmt.Sprint(st.CpusAllowedList)
	}
	return out
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
	want := fmt.Sprint([]uint64{uint64(last[0])})
	before := allowedCPUs(t, skipped)
	for _, pid := range []int{pinned, skipped} {
		for tid, got := range allowedCPUs(t, pid) {
			if got == want {
				t.Fatalf("thread %d of process %d is on CPU %s before the pinning: the test would prove nothing", tid, pid, last)
			}
		}
	}
	if err := PinTree(cmd.Process.Pid, last, skipped); err != nil {
		t.Fatal(err)
	}
	for _, pid := range []int{cmd.Process.Pid, pinned} {
		for tid, got := range allowedCPUs(t, pid) {
			if got != want {
				t.Errorf("thread %d of process %d may run on CPUs %s, want %s", tid, pid, got, want)
			}
		}
	}
	if got := allowedCPUs(t, skipped); !maps.Equal(got, before) {
		t.Errorf("the skipped child was moved from CPUs %v to %v", before, got)
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
