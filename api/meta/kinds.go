package meta

import "time"

// The facts about a kind that the reconcile skeleton, the command line and
// the UI need, asked of the object itself rather than written out again
// by each of them. Every Plumb kind implements those of its fields (a
// test in this module checks each kind against its spec and status), so
// a new kind is described once, on its type. The methods that return a
// plain field are generated (api/internal/kindgen, `make generate`).

// Scheduled is a kind reconciled again every interval after a success
// (spec.interval).
// +kubebuilder:object:generate=false
type Scheduled interface {
	GetRequeueAfter() time.Duration
}

// Retried is a kind with its own wait between attempts after a failure
// (Flux's spec.retryInterval). A kind without it is retried with
// controller-runtime's backoff.
// +kubebuilder:object:generate=false
type Retried interface {
	GetRetryInterval() time.Duration
}

// Suspendable is a kind whose reconciles can be stopped (spec.suspend).
// +kubebuilder:object:generate=false
type Suspendable interface {
	IsSuspended() bool
}

// ArtifactHolder is a kind that serves an artifact: a source's
// status.artifact, or a Kustomization's and HelmRelease's rendered
// manifests (status.renderedArtifact). nil while there is none.
// +kubebuilder:object:generate=false
type ArtifactHolder interface {
	GetArtifact() *Artifact
}

// Requestable is a kind that honours the reconcile.plumb.dev/requestedAt
// annotation (plumb reconcile, a Receiver's webhook, the UI's sync
// button): it records the last request it handled in
// status.lastHandledReconcileAt.
// +kubebuilder:object:generate=false
type Requestable interface {
	GetLastHandledReconcileRequest() string
	SetLastHandledReconcileRequest(token string)
}

// Applier is a kind that applies what it renders to a cluster: the
// revision it last applied is what it runs (status.lastAppliedRevision).
// +kubebuilder:object:generate=false
type Applier interface {
	GetLastAppliedRevision() string
}
