// Command pause is the sandbox ("pause") image of localenv's real node: the
// process that holds a Pod's namespaces while its containers come and go.
// Nothing may be pulled from outside, so Kubernetes' own pause image is
// replaced by this static Go program, built by plumb.dev/pkg/imagebuild and
// served by the launcher's registry (e2e/localenv/registry.go).
//
// It does what the real one does: sleep until SIGTERM or SIGINT, and, being
// PID 1 of a Pod that shares its PID namespace, reap the children that get
// re-parented to it so none stays a zombie.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: pause\n\nSleeps until SIGTERM or SIGINT, reaping the children that exit meanwhile.")
	}
	flag.Parse()
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for sig := range signals {
		if sig != syscall.SIGCHLD {
			return
		}
		reap()
	}
}

// reap collects every child that has exited; a SIGCHLD may stand for
// several.
func reap() {
	for {
		var status syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}
