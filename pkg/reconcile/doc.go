// Package reconcile holds what every Plumb reconciler shares around its
// steps: the predicate that reacts to the reconcile.plumb.dev/requestedAt
// annotation, the error type that carries a retry policy, the requeue
// interval with jitter, and server-side apply of a status subset under a
// controller's own field manager (two controllers write one Kustomization's
// status, each owning its own fields).
//
// # Bounded messages
//
// ApplyStatus is the one way render-, source- and sync-controller write
// status, so it is where their messages are bounded: every field named
// message in the status sent (conditions[*].message, sync.message) is cut
// to message.MaxBytes with message.Truncate, whichever step set it. The API
// server refuses a condition message over 32,768 characters, and a refused
// write would leave stale conditions behind. notification-controller writes
// status with a patch helper and calls BoundConditions instead.
//
// BoundConditions also keeps lastTransitionTime steady: conditions.Set
// compares a new message with the one read back, which is cut, and would
// stamp a new transition time on every retry of the same long failure. The
// controllers call it once their conditions are set, with the conditions as
// read. (conditions.Set itself cuts a message at 32,768 bytes, so the count
// in the marker of a longer one is of what that left.)
package reconcile
