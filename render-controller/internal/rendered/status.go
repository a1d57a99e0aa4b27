package rendered

import (
	"context"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/client"

	plumbreconcile "plumb.dev/pkg/reconcile"
)

// WriteStatus returns the status writer of a kind (pkg/reconcile's
// Controller.WriteStatus): it server-side applies owned(obj), the part of
// obj's status render-controller owns (status.renderedArtifact and the
// Rendered condition, and what else the kind records), as fieldManager on
// the status subresource, and nothing else: the conditions list merges by
// type, so sync-controller's conditions and fields stay as they are.
// Nothing is written when the owned part is as stored, and an object
// deleted meanwhile is no error.
func WriteStatus[T Object](c client.Client, fieldManager string, owned func(T) any) func(ctx context.Context, obj, stored T) error {
	return func(ctx context.Context, obj, stored T) error {
		status := owned(obj)
		if apiequality.Semantic.DeepEqual(status, owned(stored)) {
			return nil
		}
		m, err := plumbreconcile.ToStatusMap(status)
		if err != nil {
			return err
		}
		return client.IgnoreNotFound(plumbreconcile.ApplyStatus(ctx, c, obj, fieldManager, m))
	}
}
