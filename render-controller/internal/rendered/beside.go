package rendered

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	"plumb.dev/api/meta"
	"plumb.dev/pkg/artifact"
	plumbreconcile "plumb.dev/pkg/reconcile"
)

// StoreBeside stores data as a file that goes with a, the render the
// object at key serves — named by data's own digest and suffix, so that
// the same data is one file — and returns it as an artifact (its URL,
// digest and size): a HelmRelease's release record (helmrecord.go in
// render-controller's controller package). It is kept in a folder of its
// own (besideKind), so that the manifests' --artifact-retention-records
// count renders as before, and the records theirs; Forget removes both.
// A failure to store is Rendered=False, ArtifactFailed.
func (s *Store) StoreBeside(ctx context.Context, key types.NamespacedName, a *meta.Artifact, suffix string, data []byte) (*meta.Artifact, error) {
	ref := s.besideRef(key)
	name := fmt.Sprintf("%x%s", sha256.Sum256(data), suffix)
	stored, err := s.Storage.Store(ctx, ref, name, bytes.NewReader(data))
	if err != nil {
		return nil, plumbreconcile.Failed(meta.ArtifactFailedReason, fmt.Errorf("storing %s beside the rendered manifests failed: %w", name, err))
	}
	if _, err := s.Storage.GarbageCollect(ctx, ref, stored.Path); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "garbage-collecting old rendered artifacts")
	}
	return stored, nil
}

// besideKind names the storage folder of the files StoreBeside keeps for
// a kind's renders: <kind>-beside/<namespace>/<name>.
const besideKind = "-beside"

func (s *Store) besideRef(key types.NamespacedName) artifact.Ref {
	return artifact.Ref{Kind: s.Kind + besideKind, Namespace: key.Namespace, Name: key.Name}
}
