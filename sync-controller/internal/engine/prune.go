package engine

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/manage"
	"plumb.dev/pkg/object"
)

// PruneResult is the outcome of pruning one object.
type PruneResult struct {
	ID object.ID
	// Deleted is true when the object was deleted; false when it was kept
	// (gone already, not ours, or prune disabled) — Reason says which.
	Deleted bool
	Reason  string
	Err     error
}

// Prune deletes the objects, in the given order, that still carry the
// owner's labels and whose labels and annotations do not keep them from
// the prune why (manage.KeptBy: plumb.dev/prune: disabled,
// helm.sh/resource-policy: keep, Flux's prune: disabled, reconcile:
// disabled or ssa: Ignore, Argo CD's Prune=false or Delete=false). An object without our
// labels is never deleted: it was not ours, or someone
// took it over.
func (e *Engine) Prune(ctx context.Context, objs []*unstructured.Unstructured, owner manage.Owner, why manage.Pruning) []PruneResult {
	return e.PruneWith(ctx, objs, owner, why, "")
}

// PruneWith is Prune with the deletion propagation policy of each delete
// (a HelmRelease's uninstall.deletionPropagation); empty is background,
// Prune's.
func (e *Engine) PruneWith(ctx context.Context, objs []*unstructured.Unstructured, owner manage.Owner, why manage.Pruning, propagation metav1.DeletionPropagation) []PruneResult {
	if propagation == "" {
		propagation = metav1.DeletePropagationBackground
	}
	results := make([]PruneResult, 0, len(objs))
	for _, obj := range objs {
		id := object.IDOf(obj)
		res := PruneResult{ID: id}
		// Read through the label-filtered watch cache: an object without our
		// labels is not in it, and is never ours to delete. (A cached read
		// of the plain client would start a cluster-wide informer.)
		live, err := e.lookupWatched(ctx, obj)
		switch {
		case err != nil:
			res.Err = fmt.Errorf("%s: reading before prune: %w", id, err)
		case live == nil:
			res.Reason = "already gone, or not managed by this " + ownerKind(owner)
		case !owner.Owns(live.Labels):
			res.Reason = "not managed by this " + ownerKind(owner)
		case manage.KeptBy(live, why) != "":
			res.Reason = "kept by " + manage.KeptBy(live, why)
		case live.DeletionTimestamp != nil:
			res.Deleted, res.Reason = true, "already being deleted"
		default:
			// Our own deletion is not drift: the watcher must not answer it
			// with another sync.
			e.watcher.expectDeletion(live.UID)
			err := e.client.Delete(ctx, live, client.PropagationPolicy(propagation),
				client.Preconditions{UID: &live.UID})
			if err != nil && !apierrors.IsNotFound(err) {
				res.Err = fmt.Errorf("pruning: %w", e.explain(id, err))
			} else {
				res.Deleted = true
			}
		}
		if res.Deleted {
			e.Forget(id)
		}
		results = append(results, res)
	}
	return results
}

// lookupWatched returns the watch cache's metadata of obj, watching its kind
// first if needed.
func (e *Engine) lookupWatched(ctx context.Context, obj *unstructured.Unstructured) (*metav1.PartialObjectMetadata, error) {
	if err := e.watcher.Watch(ctx, obj.GroupVersionKind()); err != nil {
		return nil, err
	}
	return e.watcher.Lookup(ctx, obj.GroupVersionKind(), obj.GetNamespace(), obj.GetName())
}

func ownerKind(o manage.Owner) string {
	if o.Kind == "" {
		return kustomizev1.KustomizationKind
	}
	return o.Kind
}

// waitGone polls until the object no longer exists: an object being
// recreated must be gone before it can be created again.
func (e *Engine) waitGone(ctx context.Context, obj *unstructured.Unstructured) error {
	// An unstructured read goes to the API server, not to a cache.
	probe := &unstructured.Unstructured{}
	probe.SetGroupVersionKind(obj.GroupVersionKind())
	ticker := time.NewTicker(200 * time.Millisecond)
	defer ticker.Stop()
	for {
		err := e.client.Get(ctx, client.ObjectKeyFromObject(obj), probe)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: waiting for deletion before recreate: %w", object.IDOf(obj), ctx.Err())
		case <-ticker.C:
		}
	}
}

// distinctKinds returns the kinds of objs, each once, in first-seen order.
func distinctKinds(objs []*unstructured.Unstructured) []schema.GroupVersionKind {
	seen := map[schema.GroupVersionKind]bool{}
	var kinds []schema.GroupVersionKind
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		if !seen[gvk] {
			seen[gvk] = true
			kinds = append(kinds, gvk)
		}
	}
	return kinds
}
