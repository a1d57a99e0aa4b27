package request

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
)

// Rollback asks sync-controller to sync an earlier render of obj, a
// Kustomization or a HelmRelease, again and hold it: the annotation
// plumb.dev/rollback set to digest (an entry of status.history), and a
// reconcile request, in one merge patch made with c's identity. follow,
// when not empty, is the digest of the render current now: the first
// render of another digest ends the hold (plumb.dev/rollback-follow-git);
// empty removes an earlier follow-git. It returns the request's token, as
// Reconcile does. `plumb rollback` and the UI's Rollback button share it.
func Rollback(ctx context.Context, c client.Writer, obj client.Object, digest, follow string) (string, error) {
	token := time.Now().UTC().Format(time.RFC3339Nano)
	var followValue any // null: removed
	if follow != "" {
		followValue = follow
	}
	err := patchAnnotations(ctx, c, obj, map[string]any{
		kustomizev1.RollbackAnnotation:          digest,
		kustomizev1.RollbackFollowGitAnnotation: followValue,
		meta.ReconcileRequestAnnotation:         token,
	})
	return token, err
}

// RolledBack says whether obj carries a rollback's annotations.
func RolledBack(obj client.Object) bool {
	a := obj.GetAnnotations()
	_, rb := a[kustomizev1.RollbackAnnotation]
	_, follow := a[kustomizev1.RollbackFollowGitAnnotation]
	return rb || follow
}

// EndRollback removes a rollback's annotations from obj, so that the
// newest render is synced again (`plumb resume`, the UI's Resume).
func EndRollback(ctx context.Context, c client.Writer, obj client.Object) error {
	return patchAnnotations(ctx, c, obj, map[string]any{kustomizev1.RollbackAnnotation: nil, kustomizev1.RollbackFollowGitAnnotation: nil})
}

// patchAnnotations merge-patches obj's annotations; a nil value removes one.
func patchAnnotations(ctx context.Context, c client.Writer, obj client.Object, annotations map[string]any) error {
	data, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": annotations}})
	if err != nil {
		return err
	}
	if err := c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, data)); err != nil {
		return fmt.Errorf("annotating %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}
