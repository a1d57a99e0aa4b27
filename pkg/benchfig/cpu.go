package benchfig

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ChildrenCPU is the user and system CPU time of this process's children
// (kube-apiserver and etcd, which pkg/testenv starts), from /proc.
func ChildrenCPU() (time.Duration, error) {
	self := os.Getpid()
	return ProcessCPU(func(_, ppid int) bool { return ppid == self })
}

// SelfCPU is the user and system CPU time of this process.
func SelfCPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, err
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

// ProcessCPU is the user and system CPU time of the processes that take
// says, from /proc.
func ProcessCPU(take func(pid, ppid int) bool) (time.Duration, error) {
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		return 0, err
	}
	var ticks int64
	for _, path := range stats {
		data, err := os.ReadFile(path)
		if err != nil {
			continue // gone since the glob
		}
		// The fields after the command's closing parenthesis: state,
		// ppid, …, utime (the 12th), stime (the 13th).
		end := strings.LastIndexByte(string(data), ')')
		if end < 0 {
			continue
		}
		f := strings.Fields(string(data[end+1:]))
		if len(f) < 13 {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(path)))
		ppid, _ := strconv.Atoi(f[1])
		if !take(pid, ppid) {
			continue
		}
		utime, _ := strconv.ParseInt(f[11], 10, 64)
		stime, _ := strconv.ParseInt(f[12], 10, 64)
		ticks += utime + stime
	}
	// USER_HZ is 100 on Linux.
	return time.Duration(ticks) * 10 * time.Millisecond, nil
}
