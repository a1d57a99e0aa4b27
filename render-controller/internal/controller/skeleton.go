package controller

import (
	"context"
	"fmt"

	"github.com/fluxcd/pkg/runtime/conditions"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	"plumb.dev/pkg/events"
	plumbreconcile "plumb.dev/pkg/reconcile"
	"plumb.dev/render-controller/internal/rendered"
)

// renderSkeleton is the use of pkg/reconcile both render reconcilers
// share, a partial controller: Rendered speaks for the render's result
// (after a success, with the message the steps set), and sync-controller
// owns Ready, Reconciling, Stalled and observedGeneration. served reads
// the render the object serves: every failure's message says it is still
// served (as the render of what and its revision), every failure event
// names its revision, and the metrics record its size. owned is the part
// of the kind's status render-controller owns (status.renderedArtifact,
// the Rendered condition, and what else the kind records), which the
// skeleton applies as FieldManager when it changed, and nothing else: the
// conditions list merges by type, so sync-controller's conditions and
// fields stay as they are. A deleted object is left alone while
// sync-controller's finalizer holds it (its delete hooks and prune read
// the render; syncFinalizerReleased brings it back), then forget drops
// what is kept for it, and finalize does the kind's own clean-up. The
// caller sets the rest: the default reason, the intervals and the
// suspension.
func renderSkeleton[T plumbreconcile.Object](c client.Client, store *rendered.Store, what string,
	served func(T) *meta.Artifact, owned func(T) any,
	forget func(types.NamespacedName), finalize func(context.Context, T) error) *plumbreconcile.Controller[T] {
	return &plumbreconcile.Controller[T]{
		Condition:       kustomizev1.RenderedCondition,
		Partial:         true,
		SucceededReason: kustomizev1.RenderSucceededReason,
		Events:          store.Events,
		Metrics:         store.Metrics,
		OwnedStatus:     owned,
		Client:          c,
		FieldManager:    FieldManager,
		Succeeded:       func(obj T) string { return conditions.GetMessage(obj, kustomizev1.RenderedCondition) },
		Keeping: func(obj T) string {
			if a := served(obj); a != nil {
				return fmt.Sprintf(" (still serving the render of %s %q)", what, a.Revision)
			}
			return ""
		},
		EventOptions: func(obj T) []events.Option { return plumbreconcile.ArtifactRevision(served(obj)) },
		Finalizer: plumbreconcile.Finalizer[T]{
			Client: c, FieldManager: FieldManager, Name: Finalizer,
			Finalize: func(ctx context.Context, obj T) error {
				if syncFinalizing(obj) {
					return nil
				}
				forget(client.ObjectKeyFromObject(obj))
				return finalize(ctx, obj)
			},
		},
	}
}

// ownedConditions are the conditions of obj render-controller owns:
// Rendered alone, or none before it is set.
func ownedConditions(obj conditions.Getter) []metav1.Condition {
	if c := conditions.Get(obj, kustomizev1.RenderedCondition); c != nil {
		return []metav1.Condition{*c}
	}
	return nil
}

// syncFinalizing says whether sync-controller's finalizer still holds a
// deleted object: its deletion (the delete hooks, then the prune) reads
// the last rendered artifact, so the artifact and render-controller's
// finalizer stay until sync-controller lets go.
func syncFinalizing(obj client.Object) bool {
	return controllerutil.ContainsFinalizer(obj, kustomizev1.SyncFinalizer)
}

// syncFinalizerReleased passes the update in which sync-controller
// released a deleted object: render-controller's own finalize runs then.
type syncFinalizerReleased struct{ predicate.Funcs }

func (syncFinalizerReleased) Update(e event.UpdateEvent) bool {
	return e.ObjectNew != nil && e.ObjectOld != nil && e.ObjectNew.GetDeletionTimestamp() != nil &&
		syncFinalizing(e.ObjectOld) && !syncFinalizing(e.ObjectNew)
}
