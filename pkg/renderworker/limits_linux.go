package renderworker

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// sigCPULimit is what the kernel sends a process past its soft CPU limit.
var sigCPULimit = []os.Signal{syscall.SIGXCPU}

// maxOpenFiles bounds a worker's open files: its pipes, the Go runtime's
// few, and the one source file a build reads at a time.
const maxOpenFiles = 64

// limitProcess sets a worker's hard limits, before it reads any input:
//
//   - no new privileges (PR_SET_NO_NEW_PRIVS): nothing it could execute
//     gains any;
//   - its address space (RLIMIT_AS) is what the process has mapped once
//     started plus memory: Go maps about a gigabyte of address space at
//     start that it never touches, so a limit of memory alone would stop
//     it at once; every byte the render's heap grows maps as much, so the
//     limit bounds the render's memory to within a few MiB;
//   - open files (RLIMIT_NOFILE), file writes (RLIMIT_FSIZE: fileSize, 0
//     for a render worker, which writes no file, so any write to one
//     fails; a chart worker's chartutil.Save writes the package, at most
//     this large) and core dumps (RLIMIT_CORE 0: a crash of a render
//     writes none of its input to disk).
//
// The CPU limit is set per render (limitCPU).
func limitProcess(memory, fileSize int64) error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no new privileges: %w", err)
	}
	mapped, err := mappedBytes()
	if err != nil {
		return err
	}
	limits := []struct {
		name     string
		resource int
		value    uint64
	}{
		{"address space", unix.RLIMIT_AS, uint64(mapped) + uint64(memory)},
		{"open files", unix.RLIMIT_NOFILE, maxOpenFiles},
		{"file size", unix.RLIMIT_FSIZE, uint64(fileSize)},
		{"core size", unix.RLIMIT_CORE, 0},
	}
	for _, l := range limits {
		if err := unix.Setrlimit(l.resource, &unix.Rlimit{Cur: l.value, Max: l.value}); err != nil {
			return fmt.Errorf("%s limit: %w", l.name, err)
		}
	}
	return nil
}

// mappedBytes is the process's address space now: the first field of
// /proc/self/statm, in pages.
func mappedBytes() (int64, error) {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0, err
	}
	f := bytes.Fields(b)
	if len(f) == 0 {
		return 0, fmt.Errorf("/proc/self/statm is empty")
	}
	pages, err := strconv.ParseInt(string(f[0]), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("/proc/self/statm: %w", err)
	}
	return pages * int64(os.Getpagesize()), nil
}

// limitCPU lets the next render use d of CPU time on top of what the
// worker has used so far (the soft RLIMIT_CPU; the kernel sends SIGXCPU
// when it is passed, exitOnCPULimit ends the worker). The hard limit stays
// where it was, so a later render can be given its own d. Rounded up to
// whole seconds, the kernel's unit, plus one for the rounding.
func limitCPU(d time.Duration) error {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return err
	}
	used := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	soft := uint64(math.Ceil((used + d).Seconds())) + 1
	var l unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_CPU, &l); err != nil {
		return err
	}
	if l.Max != unix.RLIM_INFINITY && soft > l.Max {
		soft = l.Max
	}
	l.Cur = soft
	return unix.Setrlimit(unix.RLIMIT_CPU, &l)
}
