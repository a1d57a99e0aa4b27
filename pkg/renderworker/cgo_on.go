//go:build cgo

package renderworker

// withCgo is true in a build with cgo, whose threads glibc makes: each new
// thread then maps its own stack and malloc arena (threads_linux.go).
const withCgo = true
