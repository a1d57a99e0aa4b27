//go:build !linux

package renderworker

import (
	"os"
	"time"
)

// sigCPULimit is empty: only Linux workers get a CPU limit.
var sigCPULimit []os.Signal

// limitProcess sets nothing outside Linux: a worker there is bounded by
// the parent's deadline, which kills it, and by the render's own budgets
// (doc.go, "Other systems").
func limitProcess(int64, int64) error { return nil }

// makeThreadsCheap does nothing outside Linux, where no limit counts
// the threads' address space.
func makeThreadsCheap() error { return nil }

func limitCPU(time.Duration) error { return nil }
