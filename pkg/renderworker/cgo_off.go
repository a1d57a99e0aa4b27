//go:build !cgo

package renderworker

// withCgo is false in a build without cgo (the container images): Go makes
// its threads itself, with small stacks from its own heap.
const withCgo = false
