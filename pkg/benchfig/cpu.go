package benchfig

import (
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/prometheus/procfs"
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
// says, from /proc (prometheus/procfs).
func ProcessCPU(take func(pid, ppid int) bool) (time.Duration, error) {
	procs, err := procfs.AllProcs()
	if err != nil {
		return 0, err
	}
	var ticks int64
	for _, p := range procs {
		stat, err := p.Stat()
		if err != nil {
			continue // gone since the listing
		}
		if take(p.PID, stat.PPID) {
			ticks += int64(stat.UTime) + int64(stat.STime)
		}
	}
	return Ticks(ticks), nil
}

// Ticks converts a count of clock ticks, the unit of the CPU times in
// /proc/<pid>/stat, to a duration: USER_HZ is 100 on every Linux
// architecture Go runs on (procfs assumes the same).
func Ticks(n int64) time.Duration { return time.Duration(n) * time.Second / 100 }

// MachineCPU is the machine's CPU time so far, all cores together, from
// /proc/stat: its total and the part the hypervisor gave to other guests
// (steal). On a shared host a run's figures move with the steal as much
// as with the code, so a recorded run states it beside the load average.
type MachineCPU struct{ Total, Steal float64 } // seconds

// ReadMachineCPU reads MachineCPU; the zero value when /proc/stat cannot
// be read.
func ReadMachineCPU() MachineCPU {
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return MachineCPU{}
	}
	st, err := fs.Stat()
	if err != nil {
		return MachineCPU{}
	}
	c := st.CPUTotal
	return MachineCPU{
		Total: c.User + c.Nice + c.System + c.Idle + c.Iowait + c.IRQ + c.SoftIRQ + c.Steal,
		Steal: c.Steal,
	}
}

// StealSince is the share of the cores' time stolen since before, as
// "2.4 % stolen"; "?" when either reading failed.
func (m MachineCPU) StealSince(before MachineCPU) string {
	total := m.Total - before.Total
	if before.Total == 0 || total <= 0 {
		return "?"
	}
	return fmt.Sprintf("%.1f %% stolen", 100*(m.Steal-before.Steal)/total)
}
