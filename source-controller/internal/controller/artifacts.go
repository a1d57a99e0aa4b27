package controller

import (
	"context"
	"fmt"
	"os"

	"github.com/fluxcd/pkg/runtime/conditions"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/artifact"
	"plumb.dev/pkg/events"
	"plumb.dev/pkg/metrics"
	plumbreconcile "plumb.dev/pkg/reconcile"
)

// What every source kind (GitRepository, HelmRepository, HelmChart,
// OCIRepository) does the same way with its artifact: re-verify it in the
// storage step, announce a new one, garbage-collect the old ones, and
// remove them all with the object (its finalizer).

// verifyArtifact re-hashes the stored artifact a of obj and sets
// ArtifactInStorage: True when it matches, False (StorageOperationFailed)
// when missing or changed; removed when there is no artifact.
func verifyArtifact(s *artifact.Storage, obj conditions.Setter, a *meta.Artifact) bool {
	if a == nil {
		conditions.Delete(obj, sourcev1.ArtifactInStorageCondition)
		return false
	}
	if err := s.Verify(a); err != nil {
		conditions.MarkFalse(obj, sourcev1.ArtifactInStorageCondition, sourcev1.StorageOperationFailedReason,
			"the stored artifact failed verification and is rebuilt: %v", err)
		return false
	}
	conditions.MarkTrue(obj, sourcev1.ArtifactInStorageCondition, meta.SucceededReason,
		"stored artifact for revision %q", a.Revision)
	return true
}

// recordNewArtifact emits NewArtifact for a new artifact a, and
// ArtifactRebuilt for the same one stored again after it went missing or
// was changed in storage (prevOK false). same says whether a is the
// artifact prev was: sameRevisionAndDigest or sameRevision, the kind's
// choice.
func recordNewArtifact(rec *events.Recorder, obj client.Object, prev, a *meta.Artifact, prevOK bool, same func(prev, a *meta.Artifact) bool) {
	md := map[string]string{"digest": a.Digest, "url": a.URL}
	switch {
	case !same(prev, a):
		rec.Record(obj, events.SeverityInfo, sourcev1.NewArtifactReason,
			fmt.Sprintf("stored artifact for revision %q", a.Revision),
			events.WithRevision(a.Revision), events.WithMetadata(md))
	case !prevOK:
		rec.Record(obj, events.SeverityInfo, sourcev1.ArtifactRebuiltReason,
			fmt.Sprintf("rebuilt the artifact of revision %q, which was missing or changed in storage", a.Revision),
			events.WithRevision(a.Revision), events.WithMetadata(md))
	}
}

// sameRevisionAndDigest is sameness for the Helm kinds and OCIRepository
// (a new digest of the same revision is news for their consumers), and
// for what a GitRepository includes (a new digest changes what it copies).
func sameRevisionAndDigest(prev, a *meta.Artifact) bool {
	return prev.HasRevision(a.Revision) && prev.HasDigest(a.Digest)
}

// sameRevision is sameness for GitRepository: its artifact is announced
// per commit, and the same commit packed again (for a changed spec.ignore,
// spec.sparseCheckout or included artifact) is not announced as new.
func sameRevision(prev, a *meta.Artifact) bool {
	return prev.HasRevision(a.Revision)
}

// garbageCollect keeps the newest files of the object and the current one.
func garbageCollect(ctx context.Context, s *artifact.Storage, ref artifact.Ref, current *meta.Artifact) {
	if current == nil {
		return
	}
	if _, err := s.GarbageCollect(ctx, ref, current.Path); err != nil {
		// Old files staying around is no reason to fail the reconcile.
		ctrl.LoggerFrom(ctx).Error(err, "garbage-collecting old artifacts")
	}
}

// finalizer is every source kind's finalizer: a deleted object's artifact
// folder (ref) goes, then its gauges and the finalizer.
func finalizer[T plumbreconcile.Object](c client.Client, s *artifact.Storage, m *metrics.Object, ref func(T) artifact.Ref) plumbreconcile.Finalizer[T] {
	return plumbreconcile.Finalizer[T]{
		Client: c, FieldManager: FieldManager, Name: Finalizer,
		Finalize: func(ctx context.Context, obj T) error {
			if !controllerutil.ContainsFinalizer(obj, Finalizer) {
				return nil
			}
			if err := s.Remove(ref(obj)); err != nil {
				return err
			}
			m.Forget(obj.GetNamespace(), obj.GetName())
			return client.IgnoreNotFound(plumbreconcile.SetFinalizer(ctx, c, obj, FieldManager, Finalizer, false))
		},
	}
}

// readAndRun is the Reconcile of a source kind whose steps share a
// temporary folder: obj is read (a gone object is no error), Start
// finalizes a deleted one or adds the finalizer, the steps run, and the
// folder *tmp the steps made, if any, is removed.
func readAndRun[T plumbreconcile.Object](ctx context.Context, c client.Reader, sk *plumbreconcile.Controller[T], req ctrl.Request, obj T, tmp *string, steps ...plumbreconcile.Step) (ctrl.Result, error) {
	if err := c.Get(ctx, req.NamespacedName, obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if ok, err := sk.Start(ctx, obj); !ok {
		return ctrl.Result{}, err
	}
	defer func() {
		if *tmp != "" {
			_ = os.RemoveAll(*tmp)
		}
	}()
	return sk.Run(ctx, obj, steps...)
}
