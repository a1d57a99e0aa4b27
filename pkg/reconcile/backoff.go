package reconcile

import (
	"math"
	"time"
)

// Backoff is an exponential delay: First before the first retry, Factor
// times longer before each next one, never more than Max. It is Argo CD's
// sync retry rule (spec.retry of a Kustomization) and the rule of
// sync-controller's held-back corrections in a fight.
type Backoff struct {
	First  time.Duration
	Factor int64
	Max    time.Duration
}

// Delay returns the delay before retry n, 1 for the first:
// First·Factor^(n-1), at most Max (when Max is positive). A Factor below 1
// is taken as 1, an n below 1 as 1; the product is computed in floating
// point and capped before it is converted, so that a large n or Factor
// cannot overflow time.Duration.
func (b Backoff) Delay(n int64) time.Duration {
	factor := max(b.Factor, 1)
	d := float64(b.First) * math.Pow(float64(factor), float64(max(n, 1)-1))
	if b.Max > 0 && d > float64(b.Max) {
		return b.Max
	}
	if d >= math.MaxInt64 {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(d)
}

// RetryDecision is a controller's own answer, for one object, to when a
// Retry failure is tried again (Controller.RetryDelay): a per-object
// backoff with a limit, such as a Kustomization's spec.retry.
type RetryDecision struct {
	// After is the delay before the next attempt. Unlike RetryInterval it
	// is not jittered: the status tells the user when the attempt is due,
	// and the controller keeps that promise.
	After time.Duration
	// Exhausted: the retries allowed are used up. Stalled=True
	// (RetriesExceeded) and no requeue; only a watch event (a change, a
	// reconcile request) brings the object back.
	Exhausted bool
	// Note is appended to the failure's condition messages: which retry is
	// due when, or how many were made.
	Note string
}
