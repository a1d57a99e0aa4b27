package benchkit

import (
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"
)

// CPUSet is a set of CPU numbers, as -control-plane-cpus gives them.
type CPUSet []int

// ParseCPUSet reads "0" or "0,2": CPU numbers of this machine, each once.
func ParseCPUSet(s string) (CPUSet, error) {
	var set CPUSet
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 0 || n >= runtime.NumCPU() {
			return nil, fmt.Errorf("%q is not a CPU of this machine (0 to %d)", f, runtime.NumCPU()-1)
		}
		if slices.Contains(set, n) {
			return nil, fmt.Errorf("CPU %d is given twice", n)
		}
		set = append(set, n)
	}
	return set, nil
}

// Rest is the machine's other CPUs; an error when none is left.
func (s CPUSet) Rest() (CPUSet, error) {
	var rest CPUSet
	for n := range runtime.NumCPU() {
		if !slices.Contains(s, n) {
			rest = append(rest, n)
		}
	}
	if len(rest) == 0 {
		return nil, fmt.Errorf("CPUs %v are all of this machine's: none is left for the rest", []int(s))
	}
	return rest, nil
}

func (s CPUSet) String() string {
	parts := make([]string, len(s))
	for i, n := range s {
		parts[i] = strconv.Itoa(n)
	}
	return strings.Join(parts, ",")
}

// PinTree confines the process pid, every thread of it, and every process
// it started (render-controller's render workers), to cpus, except the
// processes skip names and what they started. What a pinned process
// starts afterwards inherits the affinity of the thread that starts it,
// so a process pinned once stays on cpus with all it adds.
func PinTree(pid int, cpus CPUSet, skip ...int) error {
	children, err := processTree()
	if err != nil {
		return err
	}
	for _, p := range append([]int{pid}, descendants(pid, children, skip...)...) {
		if err := Pin(p, cpus); err != nil {
			return err
		}
	}
	return nil
}

// Pin confines every thread of the process pid to cpus, not its
// children. sched_setaffinity sets one thread's affinity, so each task of
// /proc/<pid>/task is set, and the list is read again until a reading
// finds no thread not yet set: a thread started meanwhile by one not yet
// set would not inherit the set.
func Pin(pid int, cpus CPUSet) error {
	var mask unix.CPUSet
	for _, n := range cpus {
		mask.Set(n)
	}
	done := map[int]bool{}
	for range 10 {
		threads, err := procfs.AllThreads(pid)
		if err != nil {
			return fmt.Errorf("pinning process %d: %w", pid, err)
		}
		fresh := 0
		for _, t := range threads {
			tid := t.PID
			if done[tid] {
				continue
			}
			fresh++
			if err := unix.SchedSetaffinity(tid, &mask); err != nil && err != unix.ESRCH {
				return fmt.Errorf("pinning thread %d of process %d to CPUs %s: %w", tid, pid, cpus, err)
			}
			done[tid] = true
		}
		if fresh == 0 {
			return nil
		}
	}
	return fmt.Errorf("pinning process %d: it kept starting threads", pid)
}

// PlanePid is the pid of the control plane's process name (PlaneNames),
// 0 when it was not found.
func (m *Meter) PlanePid(name string) int { return m.plane[name] }
