package controller

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/source"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/artifact"
)

// maxSweep bounds the storage entries one sweep reads (namespace and
// Kustomization folders, and anything else lying there): ten times the
// 10,000 Kustomizations docs/design/scale.md sizes a cluster for. What
// lies past it waits for the next start.
const maxSweep = 100_000

// sweepLogged is how many of the swept Kustomizations the log line names.
const sweepLogged = 20

// sweepSource is a source of the Kustomization controller: once the
// Kustomization cache has synced, it queues every Kustomization that has
// a folder in storage but is not in the cache, that is, was deleted (or
// left this shard) while render-controller was not running. Its reconcile
// finds nothing and forgets it, which removes the folder; going through
// the queue, the removal never races a reconcile of a new object of that
// name. It starts with the controller, so only on the leader, the one
// replica that writes the storage.
func (r *KustomizationReconciler) sweepSource(c cache.Cache) source.Source {
	return source.Func(func(ctx context.Context, q workqueue.TypedRateLimitingInterface[ctrl.Request]) error {
		go func() {
			keys, err := r.sweep(ctx, c)
			log := ctrl.Log.WithName(ControllerName).WithName("sweep")
			if err != nil && ctx.Err() == nil { // not a shutdown
				log.Error(err, "sweeping the storage of deleted Kustomizations", "queued", len(keys))
			}
			if len(keys) > 0 {
				log.Info("removing the rendered artifacts of Kustomizations gone while render-controller was down",
					"count", len(keys), "first", keys[:min(len(keys), sweepLogged)])
			}
			for _, k := range keys {
				q.Add(ctrl.Request{NamespacedName: k})
			}
		}()
		return nil
	})
}

// sweep waits for the Kustomization cache to sync, then returns the
// Kustomizations that have a folder in storage and are not in it (within
// maxSweep entries read; a truncated listing is an error, with what was
// found).
func (r *KustomizationReconciler) sweep(ctx context.Context, c cache.Cache) ([]types.NamespacedName, error) {
	if _, err := c.GetInformer(ctx, &kustomizev1.Kustomization{}); err != nil {
		return nil, fmt.Errorf("waiting for the Kustomization cache: %w", err)
	}
	refs, lerr := r.Storage.List(ctx, kustomizev1.KustomizationKind, maxSweep)
	if errors.Is(lerr, artifact.ErrListTruncated) {
		lerr = fmt.Errorf("%w (%d entries): the rest is swept at the next start", lerr, maxSweep)
	}
	var gone []types.NamespacedName
	for _, ref := range refs {
		key := types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}
		err := c.Get(ctx, key, &kustomizev1.Kustomization{})
		switch {
		case err == nil:
		case client.IgnoreNotFound(err) == nil:
			gone = append(gone, key)
		default:
			return gone, errors.Join(lerr, err)
		}
	}
	return gone, lerr
}
