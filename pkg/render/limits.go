package render

import (
	"fmt"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	"plumb.dev/pkg/artifact"
)

// Limits bound what one build may read and produce. A build that passes
// one stops with a *Error of reason LimitExceeded naming the limit and the
// render-controller flag that sets it. Zero fields take the defaults.
type Limits struct {
	// MaxInputBytes bounds the bytes kustomize reads from the source tree
	// (every kustomization, resource, patch and generator file, counted
	// each time it is read). --max-render-input.
	MaxInputBytes int64
	// MaxNodes bounds the YAML nodes of everything read, counted after
	// alias expansion, so an alias bomb is refused before kustomize
	// inflates it. --max-yaml-nodes.
	MaxNodes int64
	// MaxDocuments bounds the YAML documents of everything read.
	// --max-yaml-documents.
	MaxDocuments int64
	// MaxOutputBytes bounds the rendered manifests. --max-rendered-size.
	MaxOutputBytes int64
}

// Defaults. kustomize holds about 1.7 KiB of memory per YAML node (measured
// on one 199,000-node file: 322 MiB peak), so the node budget is what bounds
// a render's memory: 200,000 nodes, about 340 MiB, is some 5,000 objects
// the size of a Deployment. kustomize's time grows with the square of the
// object count (4,000 small objects take about 8 s), which the document
// budget and the caller's deadline bound. docs/design/render-sandbox.md
// has the arithmetic.
const (
	DefaultMaxInputBytes  int64 = 64 << 20
	DefaultMaxNodes       int64 = 200_000
	DefaultMaxDocuments   int64 = 10_000
	DefaultMaxOutputBytes       = artifact.DefaultMaxRenderedBytes
)

// withDefaults fills the zero fields.
func (l Limits) withDefaults() Limits {
	if l.MaxInputBytes <= 0 {
		l.MaxInputBytes = DefaultMaxInputBytes
	}
	if l.MaxNodes <= 0 {
		l.MaxNodes = DefaultMaxNodes
	}
	if l.MaxDocuments <= 0 {
		l.MaxDocuments = DefaultMaxDocuments
	}
	if l.MaxOutputBytes <= 0 {
		l.MaxOutputBytes = DefaultMaxOutputBytes
	}
	return l
}

// limitErr reports a passed limit: what was being done, the limit and the
// flag that raises it.
func limitErr(format string, args ...any) error {
	return &Error{Reason: meta.LimitExceededReason, Err: fmt.Errorf(format, args...)}
}

// remoteErr reports a reference that would make kustomize reach the
// network.
func remoteErr(file, field, value string) error {
	return &Error{Reason: kustomizev1.RemoteResourceRefusedReason, Err: fmt.Errorf(
		"%s: %s %q refused: rendering reads only files inside the source, never URLs or Git repositories", file, field, value)}
}
