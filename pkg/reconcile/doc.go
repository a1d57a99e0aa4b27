// Package reconcile holds what every Plumb reconciler shares around its
// steps: the predicate that reacts to the reconcile.plumb.dev/requestedAt
// annotation, the error type that carries a retry policy, the requeue
// interval with jitter, and server-side apply of a status subset under a
// controller's own field manager (two controllers write one Kustomization's
// status, each owning its own fields).
package reconcile
