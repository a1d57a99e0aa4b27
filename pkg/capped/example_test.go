package capped_test

import (
	"fmt"

	"plumb.dev/pkg/capped"
)

// A worker's output, its first line and its last kept.
func Example() {
	stderr := capped.New(16, capped.FirstAndLast)
	fmt.Fprint(stderr, "fatal error: out of memory\n")
	fmt.Fprint(stderr, "goroutine 1 [running]:\n")
	fmt.Printf("%q, %d bytes cut\n", stderr, stderr.Cut())
	// Output: "fatal ernning]:\n", 34 bytes cut
}
