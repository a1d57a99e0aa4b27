package rendered

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	"plumb.dev/api/meta"
	"plumb.dev/pkg/artifact"
	"plumb.dev/pkg/events"
	"plumb.dev/pkg/metrics"
	plumbreconcile "plumb.dev/pkg/reconcile"
)

// Store keeps the rendered artifacts of one kind: their files, their
// announcements and, for forgetting, their metric series. The zero value
// is not usable: Storage, Events, Metrics and Kind are required.
type Store struct {
	Storage *artifact.Storage
	Events  *events.Recorder
	Metrics *metrics.Object
	// Kind names the kind's storage folder (artifact.Ref.Kind).
	Kind string

	announced announcements
}

// Render is one render to store: the manifests and their digest
// ("sha256:<hex>"), the revision of what they were rendered from, and the
// kind's metadata for status.renderedArtifact.metadata (nil: the kind
// records none, and what is stored stays).
type Render struct {
	Manifests []byte
	Digest    string
	Revision  string
	Metadata  map[string]string
	// Keep are digests of earlier renders whose files must stay whatever
	// the retention says: those of status.history, which a rollback
	// applies again (sync-controller downloads them from the same folder,
	// by digest).
	Keep []string
}

// Store makes r the artifact of the object at key, prev being the one it
// serves now, and returns the artifact it serves after, and whether that
// is a new file. The same bytes from the same revision, still intact in
// storage, keep prev (with r's metadata when it differs: only inputs that
// render the same changed) and its lastUpdateTime, so status does not
// change. Either way, the files older than the newest
// --artifact-retention-records go, but not those of r.Keep; a failure to remove them is logged, not
// returned. A failure to store is Rendered=False, ArtifactFailed.
func (s *Store) Store(ctx context.Context, key types.NamespacedName, prev *meta.Artifact, r Render) (*meta.Artifact, bool, error) {
	ref := s.ref(key)
	a, isNew := prev, false
	if prev.HasDigest(r.Digest) && prev.HasRevision(r.Revision) && s.Storage.Verify(prev) == nil {
		if r.Metadata != nil && !maps.Equal(prev.Metadata, r.Metadata) {
			a = prev.DeepCopy()
			a.Metadata = r.Metadata
		}
	} else {
		stored, err := s.Storage.Store(ctx, ref, hexOf(r.Digest)+".yaml", bytes.NewReader(r.Manifests))
		if err != nil {
			return prev, false, plumbreconcile.Failed(meta.ArtifactFailedReason, fmt.Errorf("storing the rendered manifests failed: %w", err))
		}
		stored.Revision = r.Revision
		stored.Metadata = r.Metadata
		a, isNew = stored, true
	}
	keep := []string{a.Path}
	for _, d := range r.Keep {
		keep = append(keep, hexOf(d)+".yaml")
	}
	if _, err := s.Storage.GarbageCollect(ctx, ref, keep...); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "garbage-collecting old rendered artifacts")
	}
	return a, isNew, nil
}

// Intact says whether a, the render an object serves, is in storage with
// its digest; a render that is not (a file lost or changed on disk) is
// logged, to be made again.
func (s *Store) Intact(ctx context.Context, a *meta.Artifact) bool {
	if err := s.Storage.Verify(a); err != nil {
		ctrl.LoggerFrom(ctx).Info("stored render failed verification, rendering again", "error", err.Error())
		return false
	}
	return true
}

// Forget drops what is kept for a deleted object: what was announced, its
// metric series and its storage folders (the renders', and StoreBeside's).
func (s *Store) Forget(key types.NamespacedName) {
	s.announced.forget(key)
	s.Metrics.Forget(key.Namespace, key.Name)
	_ = s.Storage.Remove(s.ref(key))
	_ = s.Storage.Remove(s.besideRef(key))
}

func (s *Store) ref(key types.NamespacedName) artifact.Ref {
	return artifact.Ref{Kind: s.Kind, Namespace: key.Namespace, Name: key.Name}
}

// hexOf returns the hex part of "sha256:<hex>".
func hexOf(digest string) string {
	_, h, _ := strings.Cut(digest, ":")
	return h
}
