package renderworker

import (
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// makeThreadsCheap starts the worker again, once, so that the threads of a
// cgo build cost little of its address-space limit. glibc gives each new
// thread a stack of RLIMIT_STACK (8 MiB by default) and, at its first
// malloc, an arena of 64 MiB of address space; a Go program starts a
// thread for every goroutine blocked in a system call, more of them on a
// busy machine, so a worker of a 96 MiB budget could fail a small chart
// after a few threads (measured: nine threads mapped 590 MiB; with one
// arena and 512 KiB stacks, 2 MiB). glibc reads both settings when the
// process starts, so the worker sets them and executes itself again before
// it sets any limit. A build without cgo needs nothing: Go's own threads
// have small stacks from its heap.
func makeThreadsCheap() error {
	if !withCgo {
		return nil
	}
	var stack unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_STACK, &stack); err != nil {
		return fmt.Errorf("reading the stack limit: %w", err)
	}
	if stack.Cur <= threadStackBytes && os.Getenv(envMallocArenas) == "1" {
		return nil // already started again
	}
	stack.Cur = min(threadStackBytes, stack.Max)
	if err := unix.Setrlimit(unix.RLIMIT_STACK, &stack); err != nil {
		return fmt.Errorf("setting the stack limit: %w", err)
	}
	if err := os.Setenv(envMallocArenas, "1"); err != nil {
		return err
	}
	// /proc/self/exe is this program even when its file was replaced.
	return fmt.Errorf("starting the worker again: %w", syscall.Exec("/proc/self/exe", os.Args, os.Environ()))
}
