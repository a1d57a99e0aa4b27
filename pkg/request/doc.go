// Package request is the client's side of a reconcile request: the
// reconcile.plumb.dev/requestedAt annotation that `plumb reconcile`,
// `plumb resume` and the UI's actions set to ask a controller to reconcile
// an object now, and read back to learn whether it did. It holds no
// controller code, so the command line and the UI import it without the
// reconcile skeleton; the controllers' side (a predicate that passes a new
// request, the copy to status.lastHandledReconcileAt) is pkg/reconcile's.
// A rollback is such a request too (Rollback, EndRollback): the
// plumb.dev/rollback annotations that `plumb rollback`, `plumb resume` and
// the UI set, read by sync-controller's hold.
package request
