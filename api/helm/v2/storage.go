package v2

// Helm's release storage (the release records sync-controller writes in
// Helm's own format, so the helm CLI reads Plumb's releases).

// DefaultMaxHistory is how many release records spec.maxHistory keeps when
// unset, as in Flux.
const DefaultMaxHistory = 5

// GetMaxHistory returns spec.maxHistory, DefaultMaxHistory when unset; 0
// keeps every record.
func (in *HelmRelease) GetMaxHistory() int {
	if in.Spec.MaxHistory == nil {
		return DefaultMaxHistory
	}
	return *in.Spec.MaxHistory
}

// GetStorageNamespace returns spec.storageNamespace, else the
// HelmRelease's namespace.
func (in *HelmRelease) GetStorageNamespace() string {
	if in.Spec.StorageNamespace != "" {
		return in.Spec.StorageNamespace
	}
	return in.Namespace
}

// Keys of the rendered artifact's metadata that lead sync-controller to
// the release record render-controller stored beside the manifests: the
// data of Helm's release (the chart's metadata and default values, the
// user's values, the manifest, hooks and notes) that sync-controller,
// which never sees the chart, writes into Helm's storage.
const (
	// ArtifactReleaseRecordKey is the record's URL, beside the manifests:
	// gzipped JSON of the release as Helm's storage holds it, without
	// what sync-controller adds (name, namespace, version, status, times).
	ArtifactReleaseRecordKey = "release-record"
	// ArtifactReleaseRecordDigestKey is its "sha256:<hex>".
	ArtifactReleaseRecordDigestKey = "release-record-digest"
	// ArtifactReleaseRecordOmittedKey says why no record was stored (it
	// would not fit in a release Secret).
	ArtifactReleaseRecordOmittedKey = "release-record-omitted"
)

// StorageFailedCondition (owned by sync-controller) is True, reason
// StorageFailed, while Helm's storage is behind status.history: the
// newest release's record could not be written (or the older ones
// trimmed), or the records could not be moved to a new
// spec.storageNamespace. sync-controller tries again at every reconcile,
// without a new release, and removes the condition once it succeeds. It
// says nothing about the release itself, which the other conditions
// describe: Ready is not changed by it.
const StorageFailedCondition = "StorageFailed"

// Reasons of the events about Helm's storage.
const (
	// AdoptedReason: the first release of a HelmRelease continued a
	// release the helm CLI or Flux's helm-controller made.
	AdoptedReason = "Adopted"
	// StorageFailedReason: a release record could not be read, written,
	// trimmed, moved or deleted; the release itself is what status says.
	StorageFailedReason = "StorageFailed"
)
