package reconcile

import (
	"errors"
	"math/rand/v2"
	"time"
)

// StalledError is an error that retrying cannot fix: only a change of the
// spec (or of what it refers to) can. Reconcilers set Stalled=True and do not
// requeue.
type StalledError struct {
	Reason string
	Err    error
}

func (e *StalledError) Error() string { return e.Err.Error() }
func (e *StalledError) Unwrap() error { return e.Err }

// Stalled wraps err as a StalledError with a condition reason.
func Stalled(reason string, err error) error { return &StalledError{Reason: reason, Err: err} }

// IsStalled reports whether err (or one it wraps) is a StalledError.
func IsStalled(err error) bool {
	var s *StalledError
	return errors.As(err, &s)
}

// WaitingError is an expected, temporary state (a dependency not ready yet):
// reconcilers report it and requeue after RequeueAfter without counting it
// as a failure.
type WaitingError struct {
	Reason       string
	Err          error
	RequeueAfter time.Duration
}

func (e *WaitingError) Error() string { return e.Err.Error() }
func (e *WaitingError) Unwrap() error { return e.Err }

// Waiting wraps err as a WaitingError.
func Waiting(reason string, after time.Duration, err error) error {
	return &WaitingError{Reason: reason, Err: err, RequeueAfter: after}
}

// AsWaiting returns the WaitingError err wraps, if any.
func AsWaiting(err error) (*WaitingError, bool) {
	var w *WaitingError
	ok := errors.As(err, &w)
	return w, ok
}

// Jitter returns d plus or minus up to 5%, so objects created together do
// not all reconcile at the same instant forever after.
func Jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return d
	}
	spread := int64(d) / 10
	if spread == 0 {
		return d
	}
	return d - time.Duration(spread/2) + time.Duration(rand.Int64N(spread))
}
