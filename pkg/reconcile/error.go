package reconcile

import (
	"errors"
	"time"

	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Policy says what the skeleton does after a step failed.
type Policy int

const (
	// Retry is a failure that may pass on its own (a remote down, an API
	// conflict): Ready=False, Reconciling=True (ProgressingWithRetry), a
	// warning event when the failure is news, and another attempt after
	// the object's retry interval, or with controller-runtime's backoff for
	// kinds without one.
	Retry Policy = iota
	// Stall is a failure that retrying cannot fix, only a change of the
	// spec (or of what it names): Ready=False, Stalled=True, a warning
	// event, and no retry — controller-runtime gets a
	// reconcile.TerminalError — unless the error polls (Error.RequeueAfter).
	Stall
	// Wait is an expected, temporary state (a dependency not ready yet),
	// not a failure: Ready=False, Reconciling=True with the error's reason,
	// no event, and a look again after Error.RequeueAfter (or when a watch
	// brings the object back, when that is zero).
	Wait
	// InProgress is a reconcile that cannot judge this generation yet
	// (another controller has not done its part): Ready=Unknown,
	// Reconciling=True, observedGeneration left as it was, no event.
	InProgress
)

func (p Policy) String() string {
	switch p {
	case Retry:
		return "Retry"
	case Stall:
		return "Stall"
	case Wait:
		return "Wait"
	case InProgress:
		return "InProgress"
	}
	return "Unknown"
}

// Error is the one error type of a reconcile step: the condition reason it
// reports and what to do about it. A step returns one of these (or a plain
// error, taken as a Retry with the controller's default reason); it never
// logs, records a failure event or requeues on its own — the skeleton does.
type Error struct {
	// Reason is the reason of the summary condition (Ready, or Rendered for
	// render-controller) and of the event.
	Reason string
	// Err is what went wrong; its text becomes the condition's message.
	Err error
	// Policy says whether to retry, stall, wait or report progress.
	Policy Policy
	// RequeueAfter is when to look again: for Wait and InProgress, the
	// wait (zero: only a watch event brings the object back); for Stall, a
	// poll interval (zero: never — a new revision upstream can make a
	// stalled source fetchable again, and only polling sees it). A Retry
	// ignores it: the retry interval is the object's.
	RequeueAfter time.Duration
	// Quiet: no failure event, because the step already recorded one of
	// its own (a PruneFailed with the objects) or another controller did.
	Quiet bool
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Failed is a Retry failure with a reason.
func Failed(reason string, err error) *Error {
	return &Error{Reason: reason, Err: err, Policy: Retry}
}

// Stalled is a Stall failure with a reason.
func Stalled(reason string, err error) *Error {
	return &Error{Reason: reason, Err: err, Policy: Stall}
}

// Waiting is a Wait with a reason, looked at again after `after`.
func Waiting(reason string, after time.Duration, err error) *Error {
	return &Error{Reason: reason, Err: err, Policy: Wait, RequeueAfter: after}
}

// Progressing is an InProgress outcome with a reason; a watch event brings
// the object back.
func Progressing(reason string, err error) *Error {
	return &Error{Reason: reason, Err: err, Policy: InProgress}
}

// WithoutEvent returns e marked Quiet: the step recorded its own event.
func (e *Error) WithoutEvent() *Error {
	e.Quiet = true
	return e
}

// Polling returns e with a poll interval (see RequeueAfter).
func (e *Error) Polling(every time.Duration) *Error {
	e.RequeueAfter = every
	return e
}

// ErrStop ends the steps early with success: the rest has nothing to do
// (a render whose cache key and artifact are unchanged).
var ErrStop = errors.New("nothing left to do")

// errSuspended is returned by Suspended.
var errSuspended = errors.New("suspended")

// Suspended ends the steps of an object whose spec.suspend is set, for the
// kinds whose status says so (Ready=False, Suspended): notification-
// controller's. The sources and Kustomizations are skipped before the
// steps instead, their status left as it was, as Flux does.
func Suspended() error { return errSuspended }

// classify returns err as an *Error: a step's own, a controller-runtime
// TerminalError as a Stall, anything else as a Retry with defaultReason.
func classify(err error, defaultReason string) *Error {
	var e *Error
	if errors.As(err, &e) {
		if e.Reason == "" {
			copied := *e
			copied.Reason = defaultReason
			return &copied
		}
		return e
	}
	if errors.Is(err, ctrlreconcile.TerminalError(nil)) {
		return Stalled(defaultReason, err)
	}
	return Failed(defaultReason, err)
}

// PolicyOf is the policy the skeleton applies to err: a step's own, Stall
// for a controller-runtime TerminalError, Retry for anything else.
func PolicyOf(err error) Policy {
	return classify(err, "").Policy
}
