// Package reconcile is the skeleton every Plumb reconciler shares: an
// ordered list of named steps, one error type that carries what to do
// about a failure, and one deferred summary that turns the outcome into
// conditions, an event, a log line, metrics, one status write and a
// requeue decision. A controller's Reconcile reads as its list of steps:
//
//	return r.skeleton().Run(ctx, obj,
//		reconcile.Bind("storage", r.reconcileStorage, obj, st),
//		reconcile.Bind("source", r.reconcileSource, obj, st),
//		reconcile.Bind("artifact", r.reconcileArtifact, obj, st),
//	)
//
// docs/design/anatomy-of-a-controller.md walks through one controller
// built this way.
//
// # Steps and their errors
//
// A step sets the conditions of its own concern (FetchFailed,
// ArtifactInStorage, Healthy, …) and returns nil, ErrStop (nothing left
// to do: the rest is skipped, the reconcile succeeds) or an *Error built
// with Failed, Stalled, Waiting or Progressing. The error's Policy says
// what follows; a plain error is a Retry with the controller's default
// reason, and controller-runtime's reconcile.TerminalError is a Stall. A
// step never logs a failure, records a failure event or decides when to
// come back: Run does, once. A panic in a step fails it like an error.
//
// # The summary
//
// Controller.Run owns the condition that speaks for the result (Ready, or
// Rendered for render-controller), Reconciling, Stalled, observedGeneration
// and lastHandledReconcileAt, following kstatus:
//
//	outcome     Ready    Reconciling                 Stalled  observedGeneration  event  back after
//	success     True     removed                     removed  set                 -      its interval, jittered
//	Retry       False    True, ProgressingWithRetry  removed  set                 error  RetryDelay, retry interval, else backoff
//	used up     False    removed                     True     set                 error  never (TerminalError)
//	Stall       False    removed                     True     set                 error  never (TerminalError), or its poll
//	Wait        False    True, its reason            removed  set                 -      its RequeueAfter
//	InProgress  Unknown  True, its reason            -        unchanged           -      its RequeueAfter, or a watch
//
// A Retry is the controller's own retry rule's to time when it has one
// (RetryDelay: a Kustomization's spec.retry, a backoff with a limit,
// computed with Backoff); "used up" is a Retry after the last retry that
// rule allows: Stalled (RetriesExceeded) until a watch event brings the
// object back. Otherwise the retry interval, jittered: Controller's
// RetryInterval, else the object's own (meta.Retried), else
// controller-runtime's backoff for kinds without one. After a success a
// scheduled kind (meta.Scheduled) comes back after its interval plus or
// minus 5% (Jitter), so objects created together drift apart instead of
// reconciling in step for ever, as Flux jitters its requeue; a kind only
// watched comes back when a watch brings it.
//
// This table is the one statement of the outcomes: the controllers'
// documentation and docs/design/anatomy-of-a-controller.md link here.
// Example shows a controller of two steps going through two of them.
//
// A generation not seen before is first marked Reconciling and written,
// so that no reader takes the old Ready for the new spec's. A controller
// that writes part of a shared status (Partial) sets only its own
// condition.
//
// Failures are logged at error level with the request's logger, once:
// by Run when it requeues itself, by controller-runtime when Run hands it
// the error (backoff, TerminalError). Every failed attempt records its
// event; telling a repeat from news is notification-controller's job
// (events.Fingerprint and --rate-limit-interval), so a failure that lasts
// is recalled once per interval rather than told once and forgotten.
//
// # Status writes
//
// A controller names the part of the status it owns (OwnedStatus) and
// the skeleton applies it, only when it differs from what was read.
// ApplyStatus is the one way render-, source- and sync-controller write
// status (server-side apply under the controller's field manager: two
// controllers share one Kustomization's status, each owning its own
// fields), and notification-controller's skeleton uses it too. It is
// where messages are bounded: every field named message in the status
// sent (conditions[*].message, sync.message) is cut to message.MaxBytes
// with message.Truncate, whichever step set it. The API server refuses a
// condition message over 32,768 characters, and a refused write would
// leave stale conditions behind.
//
// BoundConditions, which Run calls before the write, also keeps
// lastTransitionTime steady: conditions.Set compares a new message with
// the one read back, which is cut, and would stamp a new transition time
// on every retry of the same long failure. (conditions.Set itself cuts a
// message at 32,768 bytes, so the count in the marker of a longer one is
// of what that left.)
//
// SetFinalizer adds and removes a controller's finalizer by server-side
// apply, so two controllers finalizing one object never drop each other's.
// Controller.Start, the beginning of every reconcile once the object is
// read, uses it: a deleted object is handed to the Finalizer's Finalize, a
// live one gets the finalizer, a suspended one is only recorded. A Retired
// finalizer is no longer added (render-controller's on Kustomizations,
// whose delete event is enough: docs/design/scale.md); Finalize still runs
// and Release lets go of it on the objects an older version gave it.
//
// # What Plumb keeps of its own
//
// Jitter stays here rather than fluxcd/pkg/runtime/jitter, whose shared
// math/rand.Rand is not safe for concurrent reconciles. The skeleton
// itself plays the part of fluxcd/pkg/runtime's summarize helper, whose
// patch helper writes status by merge patch: Plumb's Kustomization status
// has two writers that must each own their fields, which needs
// server-side apply.
package reconcile
