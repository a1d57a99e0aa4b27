package rendered

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	"plumb.dev/api/meta"
	plumbreconcile "plumb.dev/pkg/reconcile"
)

// StoreBeside stores data as a file beside a, the render the object at key
// serves — named by data's own digest and suffix, so that the same data is
// one file — and returns it as an artifact (its URL, digest and size).
// The garbage collection keeps both: a HelmRelease's release record
// (render-controller's helmrelease_controller.go) must be there as long
// as the render it describes. A failure to store is Rendered=False,
// ArtifactFailed.
func (s *Store) StoreBeside(ctx context.Context, key types.NamespacedName, a *meta.Artifact, suffix string, data []byte) (*meta.Artifact, error) {
	ref := s.ref(key)
	name := fmt.Sprintf("%x%s", sha256.Sum256(data), suffix)
	stored, err := s.Storage.Store(ctx, ref, name, bytes.NewReader(data))
	if err != nil {
		return nil, plumbreconcile.Failed(meta.ArtifactFailedReason, fmt.Errorf("storing %s beside the rendered manifests failed: %w", name, err))
	}
	if _, err := s.Storage.GarbageCollect(ctx, ref, a.Path, stored.Path); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "garbage-collecting old rendered artifacts")
	}
	return stored, nil
}
