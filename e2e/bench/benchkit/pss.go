package benchkit

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/procfs"

	"plumb.dev/pkg/benchfig"
)

// MemSampler samples the memory of named processes together with every
// process they started (render-controller's render workers,
// source-controller's chart workers), so that a controller that does its
// work in child processes and one that does it in its own are counted
// alike.
//
// The figure is the proportional set size (Pss in
// /proc/<pid>/smaps_rollup): each resident page counted once, divided
// among the processes that map it. A worker is the controller's own
// binary started again, so most of its resident pages are the
// controller's too; adding VmHWM or VmRSS would count those pages once per
// worker, Pss counts them once in all. Pss has no high-water mark in
// /proc, so the sampler reads it every Every and keeps the samples: a
// peak is the largest sum over one sample (one instant) of the processes
// asked for, and a burst shorter than Every can be missed — which is why
// the VmHWM figures, exact peaks per process, stay next to it.
type MemSampler struct {
	every time.Duration
	roots map[string]func() int

	mu      sync.Mutex
	samples []map[string]MemSample
	cpu     map[string][2]time.Duration // name → the tree's CPU at the first and the last sample
	workers map[string]int64            // name → the largest VmHWM of a descendant, KiB
	errs    int

	stop chan struct{}
	done chan struct{}
}

// MemSample is one process tree at one instant.
type MemSample struct {
	PSS     int64 // KiB: the process's Pss plus its descendants'
	Self    int64 // KiB: the process's own Pss
	Workers int   // descendants alive
	// Anon is the part of PSS that is anonymous memory (Pss_Anon: heaps,
	// stacks), the rest being mapped files (the binary) and shared memory.
	Anon int64
}

// NewMemSampler samples the processes named (name → current pid, 0 while
// not running) every every.
func NewMemSampler(roots map[string]func() int, every time.Duration) *MemSampler {
	return &MemSampler{every: every, roots: roots, workers: map[string]int64{}, cpu: map[string][2]time.Duration{}}
}

// Start samples in the background until Stop or ctx ends.
func (s *MemSampler) Start(ctx context.Context) {
	s.stop, s.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(s.done)
		t := time.NewTicker(s.every)
		defer t.Stop()
		for {
			s.sample()
			select {
			case <-ctx.Done():
				return
			case <-s.stop:
				return
			case <-t.C:
			}
		}
	}()
}

// Stop ends the sampling after one last sample.
func (s *MemSampler) Stop() {
	if s.stop == nil {
		return
	}
	close(s.stop)
	<-s.done
	s.sample()
	s.stop = nil
}

func (s *MemSampler) sample() {
	children, err := processTree()
	if err != nil {
		s.mu.Lock()
		s.errs++
		s.mu.Unlock()
		return
	}
	one := map[string]MemSample{}
	hwm := map[string]int64{}
	cpu := map[string]time.Duration{}
	for name, pidOf := range s.roots {
		root := pidOf()
		if root <= 0 {
			continue
		}
		self, err := readRollup(root)
		if err != nil {
			continue // exited between the listing and the read
		}
		m := MemSample{PSS: self.pss, Self: self.pss, Anon: self.anon}
		cpu[name] += treeCPU(root)
		for _, pid := range descendants(root, children) {
			r, err := readRollup(pid)
			if err != nil {
				continue
			}
			m.PSS += r.pss
			m.Anon += r.anon
			cpu[name] += treeCPU(pid)
			m.Workers++
			if p, err := ReadProc(pid); err == nil && p.HWM > hwm[name] {
				hwm[name] = p.HWM
			}
		}
		one[name] = m
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.samples = append(s.samples, one)
	for name, kb := range hwm {
		s.workers[name] = max(s.workers[name], kb)
	}
	for name, d := range cpu {
		c, seen := s.cpu[name]
		if !seen {
			c[0] = d
		}
		c[1] = d
		s.cpu[name] = c
	}
}

// CPU is the CPU time the named process and its descendants used between
// the first sample and the last: each live process's utime and stime plus
// what its children that it reaped used (cutime, cstime), so that a worker
// replaced meanwhile is still counted. The CPU of a worker that exited
// between two samples and was not reaped yet is missed.
func (s *MemSampler) CPU(name string) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.cpu[name]
	return c[1] - c[0]
}

// TreeCPU is the CPU time root and its live descendants used: each one's
// treeCPU, so that the children each reaped count too; children is
// processTree's. The CPU of a child that exited and was not reaped yet is
// missed.
func TreeCPU(root int, children map[int][]int) time.Duration {
	cpu := treeCPU(root)
	for _, pid := range descendants(root, children) {
		cpu += treeCPU(pid)
	}
	return cpu
}

// descendants lists root's descendants in children (processTree's),
// children before grandchildren, leaving out the processes skip names
// and their own descendants.
func descendants(root int, children map[int][]int, skip ...int) []int {
	var out []int
	queue := append([]int(nil), children[root]...)
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		if slices.Contains(skip, pid) {
			continue
		}
		queue = append(queue, children[pid]...)
		out = append(out, pid)
	}
	return out
}

// treeCPU is one process's utime + stime + cutime + cstime; 0 when it is
// gone.
func treeCPU(pid int) time.Duration {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return 0
	}
	stat, err := p.Stat()
	if err != nil {
		return 0
	}
	return benchfig.Ticks(int64(stat.UTime) + int64(stat.STime) + int64(stat.CUTime) + int64(stat.CSTime))
}

// Peak returns the largest sum of the named processes' trees over one
// sample, and that sample's figures per name.
func (s *MemSampler) Peak(names ...string) (int64, map[string]MemSample) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var best int64
	var at map[string]MemSample
	for _, one := range s.samples {
		var sum int64
		for _, n := range names {
			sum += one[n].PSS
		}
		if sum > best {
			best, at = sum, one
		}
	}
	return best, at
}

// WorkerHWM is the largest VmHWM, KiB, of any descendant of the named
// process seen by a sample (0: none seen).
func (s *MemSampler) WorkerHWM(name string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.workers[name]
}

// Samples is how many samples were taken.
func (s *MemSampler) Samples() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.samples)
}

// ReadPss returns a process's proportional set size, KiB, from
// /proc/<pid>/smaps_rollup (Linux 4.14 and later).
func ReadPss(pid int) (int64, error) {
	r, err := readRollup(pid)
	return r.pss, err
}

type rollup struct{ pss, anon int64 }

// readRollup reads smaps_rollup itself rather than through procfs, whose
// ProcSMapsRollup has no Pss_Anon (its Anonymous is the whole resident
// anonymous memory, not the process's proportional share of it) and reads
// a zombie's empty file as zeros where this says it has no Pss.

func readRollup(pid int) (rollup, error) {
	var r rollup
	f, err := os.Open(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return r, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	seen := false
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), ":")
		if !ok || (name != "Pss" && name != "Pss_Anon") {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
		if err != nil {
			return r, fmt.Errorf("/proc/%d/smaps_rollup %s: %w", pid, name, err)
		}
		if name == "Pss" {
			r.pss, seen = kb, true
		} else {
			r.anon = kb
		}
	}
	if err := sc.Err(); err != nil {
		return r, err
	}
	if !seen {
		// A process that exited (a zombie) has an empty smaps_rollup.
		return r, fmt.Errorf("/proc/%d/smaps_rollup: no Pss", pid)
	}
	return r, nil
}

// processTree lists the live processes' pids by their parent's, from one
// listing of /proc.
func processTree() (map[int][]int, error) {
	procs, err := procfs.AllProcs()
	if err != nil {
		return nil, err
	}
	children := map[int][]int{}
	for _, p := range procs {
		stat, err := p.Stat()
		if err != nil {
			continue // gone since the listing
		}
		children[stat.PPID] = append(children[stat.PPID], p.PID)
	}
	return children, nil
}

// Pid returns how to find a measured process's current pid, for a
// MemSampler; nil for a name the meter does not measure.
func (m *Meter) Pid(name string) func() int {
	if p, ok := m.procs[name]; ok {
		return p.Pid
	}
	return nil
}
