package meta

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// LocalObjectReference names an object in the namespace of the referrer.
type LocalObjectReference struct {
	// Name of the referent.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// DependencyReference is an entry of dependsOn (Flux's type): an object
// of the referrer's kind that must be ready first.
type DependencyReference struct {
	// Name of the referent.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// Namespace of the referent; defaults to the namespace of the referrer.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace,omitempty"`

	// ReadyExpr is a CEL expression that says when the dependency is
	// ready, instead of the built-in check (Ready=True at its latest
	// generation): `dep` is the dependency, `self` the referrer, each as
	// its whole object, and the expression must return a bool.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	ReadyExpr string `json:"readyExpr,omitempty"`
}

// NamespacedObjectReference names an object, optionally in another namespace.
type NamespacedObjectReference struct {
	// Name of the referent.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// Namespace of the referent; defaults to the namespace of the referrer.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace,omitempty"`
}

// Artifact describes a content-addressed file that a controller produced and
// serves over HTTP for the next controller in the pipeline.
type Artifact struct {
	// Path is the artifact's location relative to the storage root, e.g.
	// gitrepository/<namespace>/<name>/<commit>.tar.gz.
	// +required
	Path string `json:"path"`

	// URL is the HTTP address the artifact is downloaded from.
	// +required
	URL string `json:"url"`

	// Revision is the source revision the artifact was made from, e.g.
	// main@sha1:<hash>.
	// +required
	Revision string `json:"revision"`

	// Digest is the artifact's checksum, "sha256:<hex>".
	// +optional
	// +kubebuilder:validation:Pattern="^sha256:[a-f0-9]{64}$"
	Digest string `json:"digest,omitempty"`

	// Size is the artifact's size in bytes.
	// +optional
	Size *int64 `json:"size,omitempty"`

	// LastUpdateTime is when the artifact last changed.
	// +required
	LastUpdateTime metav1.Time `json:"lastUpdateTime"`

	// Metadata describes what the artifact holds, e.g. the chart name and
	// version and the digest of the values a HelmRelease was rendered with.
	// +optional
	Metadata map[string]string `json:"metadata,omitempty"`
}

// HasRevision reports whether the artifact was made from the given revision.
func (in *Artifact) HasRevision(revision string) bool {
	return in != nil && in.Revision == revision
}

// HasDigest reports whether the artifact has the given digest.
func (in *Artifact) HasDigest(digest string) bool {
	return in != nil && in.Digest == digest
}

// ReconcileRequestStatus records the last reconcile request a controller
// acted on, so a new value of the requestedAt annotation is seen as new.
type ReconcileRequestStatus struct {
	// LastHandledReconcileAt is the value of the reconcile.plumb.dev/requestedAt
	// annotation that the controller last acted on.
	// +optional
	LastHandledReconcileAt string `json:"lastHandledReconcileAt,omitempty"`
}

// GetLastHandledReconcileRequest returns the last handled request token.
func (in ReconcileRequestStatus) GetLastHandledReconcileRequest() string {
	return in.LastHandledReconcileAt
}

// SetLastHandledReconcileRequest records a handled request token.
func (in *ReconcileRequestStatus) SetLastHandledReconcileRequest(token string) {
	in.LastHandledReconcileAt = token
}

// History is the last sync operations of an object, newest first, one
// entry per distinct digest (Flux's meta.History, the shape of its
// Kustomization's status.history).
type History []Snapshot

// Snapshot is one entry of a History: the rendered artifact a sync applied,
// and how its syncs went. A sync of the same digest again updates the
// entry and moves it first.
type Snapshot struct {
	// Digest is the digest of the rendered artifact applied,
	// "sha256:<hex>": the name of its file beside the newest render, as
	// long as render-controller keeps it.
	// +required
	Digest string `json:"digest"`

	// FirstReconciled is when the digest was first synced.
	// +required
	FirstReconciled metav1.Time `json:"firstReconciled"`

	// LastReconciled is when a sync of the digest last finished, or failed.
	// +required
	LastReconciled metav1.Time `json:"lastReconciled"`

	// LastReconciledDuration is how long that sync took.
	// +required
	LastReconciledDuration metav1.Duration `json:"lastReconciledDuration"`

	// LastReconciledStatus is how that sync ended: the Ready reason,
	// Succeeded or the reason of its failure.
	// +required
	LastReconciledStatus string `json:"lastReconciledStatus"`

	// TotalReconciliations counts the syncs of the digest.
	// +required
	TotalReconciliations int64 `json:"totalReconciliations"`

	// Metadata describes what was applied; HistoryRevisionKey holds the
	// source revision.
	// +optional
	Metadata map[string]string `json:"metadata,omitempty"`
}

// HistoryRevisionKey is the key of a Snapshot's metadata that holds the
// source revision the artifact was rendered from, as in Flux.
const HistoryRevisionKey = "revision"
