package reconcile

import (
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"plumb.dev/pkg/request"
)

// RequestedAt returns the newest reconcile request of obj, Plumb's
// reconcile.plumb.dev/requestedAt or Flux's reconcile.fluxcd.io/requestedAt,
// "" when there is none (request.Annotation; clients ask with
// request.Reconcile).
func RequestedAt(obj client.Object) string { return request.Annotation(obj) }

// RequestedPredicate passes updates that change the requestedAt annotation,
// so setting it to a new value (a webhook, `plumb reconcile`) triggers a
// reconcile at once. Combine it with GenerationChangedPredicate using Or.
type RequestedPredicate struct {
	predicate.Funcs
}

// Update passes when the annotation's value changed.
func (RequestedPredicate) Update(e event.UpdateEvent) bool {
	if e.ObjectOld == nil || e.ObjectNew == nil {
		return false
	}
	now := RequestedAt(e.ObjectNew)
	return now != "" && now != RequestedAt(e.ObjectOld)
}
