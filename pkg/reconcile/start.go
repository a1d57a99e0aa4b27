package reconcile

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"plumb.dev/api/meta"
	"plumb.dev/pkg/events"
)

// Finalizer is a controller's finalizer on the objects it reconciles:
// Start adds it to every live object, and hands a deleted one to Finalize.
// A Retired finalizer is one the controller no longer adds (each add is a
// write of the object): Start still hands deleted objects to Finalize,
// which releases it from those an older version gave it.
type Finalizer[T Object] struct {
	// Client sets the finalizer, by server-side apply as FieldManager
	// (SetFinalizer).
	Client       client.Client
	FieldManager string
	// Name is the finalizer, e.g. render.plumb.dev/finalizer.
	Name string
	// Finalize cleans up after a deleted object and removes the finalizer
	// (it is called whether the object still has it or not; Release).
	Finalize func(context.Context, T) error
	// Retired: Start no longer adds Name to live objects.
	Retired bool
}

// Release removes the finalizer from obj when obj carries it, and does
// nothing otherwise: the end of every Finalize. An object already gone is
// not an error.
func (f Finalizer[T]) Release(ctx context.Context, obj T) error {
	if !controllerutil.ContainsFinalizer(obj, f.Name) {
		return nil
	}
	return client.IgnoreNotFound(SetFinalizer(ctx, f.Client, obj, f.FieldManager, f.Name, false))
}

// Start takes an object just read through the beginning every reconcile
// shares, before its steps: a deleted object is finalized, a live one
// gets the finalizer when it has none (unless it is Retired), and a
// suspended one (meta.Suspendable) has its gauges recorded and nothing else done. It returns false when
// the reconcile ends there, with the error to return.
func (c *Controller[T]) Start(ctx context.Context, obj T) (bool, error) {
	f := c.Finalizer
	if !obj.GetDeletionTimestamp().IsZero() {
		return false, f.Finalize(ctx, obj)
	}
	if !f.Retired && !controllerutil.ContainsFinalizer(obj, f.Name) {
		if err := SetFinalizer(ctx, f.Client, obj, f.FieldManager, f.Name, true); err != nil {
			return false, err
		}
	}
	if suspended(obj) {
		ctrl.LoggerFrom(ctx).V(1).Info("suspended, nothing done")
		c.Record(obj)
		return false, nil
	}
	return true, nil
}

// ArtifactSize is the size of artifact a for the metrics, nil without
// one: the ArtifactSize of a kind whose status holds one artifact.
func ArtifactSize(a *meta.Artifact) *int64 {
	if a == nil {
		return nil
	}
	return a.Size
}

// ArtifactRevision names the revision of artifact a in an event, none
// without one: the EventOptions of a kind whose failures keep serving it.
func ArtifactRevision(a *meta.Artifact) []events.Option {
	if a == nil {
		return nil
	}
	return []events.Option{events.WithRevision(a.Revision)}
}
