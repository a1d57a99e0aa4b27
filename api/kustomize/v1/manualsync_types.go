package v1

// Manual and selective sync (docs/design/sync-engine.md, "Manual sync"),
// for a Kustomization and a HelmRelease alike: with spec.syncPolicy Manual
// every new revision is rendered and compared with the cluster by a
// server-side dry-run, and applied only when a person asks for it.

// SyncPolicy says whether sync-controller applies each new revision on its
// own or waits until a sync is asked for.
// +kubebuilder:validation:Enum=Automatic;Manual
type SyncPolicy string

const (
	// SyncPolicyAutomatic applies every new revision (the default).
	SyncPolicyAutomatic SyncPolicy = "Automatic"
	// SyncPolicyManual compares every new revision with the cluster and
	// applies it only on a sync request (SyncRequestAnnotation); drift is
	// reported, never corrected.
	SyncPolicyManual SyncPolicy = "Manual"
)

const (
	// OutOfSyncCondition (owned by sync-controller) is True while an object
	// with syncPolicy Manual differs from its render: a revision or spec
	// waiting for a manual sync (reason ManualSyncPending) or drift of what
	// was applied (reason DriftDetected). status.outOfSync has the details.
	OutOfSyncCondition = "OutOfSync"
	// ManualSyncPendingReason: OutOfSync=True while a render that differs
	// from the cluster waits for a manual sync.
	ManualSyncPendingReason = "ManualSyncPending"
	// SelectiveSyncReason: the event of a selective sync, naming the objects
	// it applied.
	SelectiveSyncReason = "SelectiveSync"
)

const (
	// SyncRequestAnnotation asks for a sync of an object whose syncPolicy
	// is Manual. Its value is a token (a timestamp, as
	// reconcile.plumb.dev/requestedAt's): each new value runs one sync,
	// and status.lastHandledSyncAt records the one handled.
	SyncRequestAnnotation = "plumb.dev/sync"
	// SyncOnlyAnnotation, beside SyncRequestAnnotation, makes the sync
	// selective: a comma-separated list of Kind/namespace/name (Kind/name
	// for a cluster-scoped object) of the current render. Only those are
	// applied, without hooks, and nothing is pruned.
	SyncOnlyAnnotation = "plumb.dev/sync-only"
)

// MaxOutOfSyncObjects bounds each list of status.outOfSync.
const MaxOutOfSyncObjects = 20

// ManualSyncStatus is what sync-controller records of manual syncs, in the
// status of a Kustomization and of a HelmRelease.
type ManualSyncStatus struct {
	// LastHandledSyncAt is the value of the plumb.dev/sync annotation that
	// sync-controller last acted on.
	// +optional
	LastHandledSyncAt string `json:"lastHandledSyncAt,omitempty"`

	// OutOfSync is how the cluster differs from the render, with
	// syncPolicy Manual; absent when it does not.
	// +optional
	OutOfSync *OutOfSyncStatus `json:"outOfSync,omitempty"`
}

// OutOfSyncStatus summarizes what a manual sync of the current render would
// do, as a server-side dry-run found it.
type OutOfSyncStatus struct {
	// Revision is the render's revision that waits for a sync (the source
	// revision, or a HelmRelease's chart version).
	Revision string `json:"revision"`
	// Digest is the digest of that rendered artifact.
	// +optional
	Digest string `json:"digest,omitempty"`
	// Create, Change and Prune name the objects (Kind/namespace/name) a
	// sync would create, change and prune, at most MaxOutOfSyncObjects
	// each; the counts are the whole numbers.
	// +optional
	// +kubebuilder:validation:MaxItems=21
	Create []string `json:"create,omitempty"`
	// +optional
	// +kubebuilder:validation:MaxItems=21
	Change []string `json:"change,omitempty"`
	// +optional
	// +kubebuilder:validation:MaxItems=21
	Prune []string `json:"prune,omitempty"`
	// Creates, Changes and Prunes count the objects of each list.
	// +optional
	Creates int `json:"creates,omitempty"`
	// +optional
	Changes int `json:"changes,omitempty"`
	// +optional
	Prunes int `json:"prunes,omitempty"`
}

// GetSyncPolicy returns the sync policy, Automatic when unset.
func (in *Kustomization) GetSyncPolicy() SyncPolicy {
	if in.Spec.SyncPolicy == "" {
		return SyncPolicyAutomatic
	}
	return in.Spec.SyncPolicy
}
