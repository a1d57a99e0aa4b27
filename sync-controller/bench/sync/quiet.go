package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"plumb.dev/pkg/benchfig"
)

// The API server and etcd keep working for a while after a thousand
// writes (the watch cache's fan-out, etcd's commits, their garbage
// collection), and a loop started in that tail pays for the one before
// it, as it does for the in-process controller's work on its watch
// events. Every timed side starts only once they are quiet: the API
// server, etcd and this process together using less than quietShare of
// one core over a quietWindow, waiting at most quietMax.
const (
	quietWindow = 250 * time.Millisecond
	quietShare  = 0.10
	quietMax    = 10 * time.Second
)

// quiesce waits until kube-apiserver, etcd and this process are quiet, so that each
// timed side, the controller's and the bare loop's alike, starts on an
// API server that is not still busy with the side before it.
func (b *bench) quiesce(ctx context.Context) error {
	start := time.Now()
	prev, err := benchCPU()
	if err != nil {
		return err
	}
	for time.Since(start) < quietMax {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(quietWindow):
		}
		cpu, err := benchCPU()
		if err != nil {
			return err
		}
		if float64(cpu-prev) < quietShare*float64(quietWindow) {
			return nil
		}
		prev = cpu
	}
	fmt.Fprintf(os.Stderr, "   (the API server, etcd or the controller were still busy after %s; timing anyway)\n", benchfig.Round(quietMax))
	return nil
}

// benchCPU is the CPU time of this process (the bench and the in-process
// controller) and its children (kube-apiserver, etcd).
func benchCPU() (time.Duration, error) {
	self := os.Getpid()
	return benchfig.ProcessCPU(func(pid, ppid int) bool { return pid == self || ppid == self })
}
