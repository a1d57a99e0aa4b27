package meta

import "time"

// The facts about a kind that the reconcile skeleton, the command line and
// the UI need, asked of the object itself rather than written out again
// by each of them. Every Plumb kind implements those of its fields (a
// test in this module checks each kind against its spec and status), so
// a new kind is described once, on its type.

// Scheduled is a kind reconciled again every interval after a success
// (spec.interval).
type Scheduled interface {
	GetRequeueAfter() time.Duration
}

// Retried is a kind with its own wait between attempts after a failure
// (Flux's spec.retryInterval). A kind without it is retried with
// controller-runtime's backoff.
type Retried interface {
	GetRetryInterval() time.Duration
}

// Suspendable is a kind whose reconciles can be stopped (spec.suspend).
type Suspendable interface {
	IsSuspended() bool
}

// ArtifactHolder is a kind that serves an artifact: a source's
// status.artifact, or a Kustomization's and HelmRelease's rendered
// manifests (status.renderedArtifact). nil while there is none.
type ArtifactHolder interface {
	GetArtifact() *Artifact
}
