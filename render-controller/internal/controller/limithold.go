package controller

import (
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"plumb.dev/api/meta"
	plumbreconcile "plumb.dev/pkg/reconcile"
	"plumb.dev/pkg/render"
)

// limitHoldFirst is the longest first wait after a render passed a limit:
// the object's retry interval when shorter. A limit passed once may be the
// machine's bad minute (a render past its deadline on a busy node), so the
// first retry comes soon; each next one waits twice as long, up to the
// object's interval.
const limitHoldFirst = 30 * time.Second

// limitHolds keeps a render that passed a limit (LimitExceeded: memory,
// time, CPU, output, a worker that died) from being tried again in a loop.
// A render that blew its limits costs a worker process and, up to its
// deadline, a core; tried again at every retry interval it would cost them
// for ever. So the same inputs — the render's cache key: source digest,
// spec generation, variables or values, keys — are held back with an
// exponential backoff up to the object's interval, and the event is
// recorded once, with the first failure; new inputs render at once.
type limitHolds struct {
	mu    sync.Mutex
	holds map[types.NamespacedName]*limitHold
	// now is time.Now; tests set it.
	now func() time.Time
}

// limitHold is one object's held inputs.
type limitHold struct {
	inputs   string
	attempts int64
	retryAt  time.Time
	message  string
}

func (h *limitHolds) clock() time.Time {
	if h.now != nil {
		return h.now()
	}
	return time.Now()
}

// check returns the LimitExceeded failure again, without rendering or an
// event, while key's inputs are held; nil when they are not (other inputs,
// or the backoff has passed).
func (h *limitHolds) check(key types.NamespacedName, inputs string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	hold := h.holds[key]
	if hold == nil {
		return nil
	}
	if hold.inputs != inputs {
		delete(h.holds, key)
		return nil
	}
	wait := hold.retryAt.Sub(h.clock())
	if wait <= 0 {
		return nil
	}
	return plumbreconcile.Stalled(meta.LimitExceededReason, fmt.Errorf("%s", hold.message)).
		Polling(wait).WithoutEvent()
}

// failed is the step's error for a failed render: a LimitExceeded holds
// key's inputs back for the next backoff (an event the first time only),
// any other failure is a plain Retry.
func (h *limitHolds) failed(key types.NamespacedName, inputs string, retryInterval, interval time.Duration, err error) error {
	reason := render.Reason(err)
	if reason != meta.LimitExceededReason {
		h.forget(key)
		return plumbreconcile.Failed(reason, err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.holds == nil {
		h.holds = map[types.NamespacedName]*limitHold{}
	}
	hold := h.holds[key]
	first := hold == nil || hold.inputs != inputs
	if first {
		hold = &limitHold{inputs: inputs}
		h.holds[key] = hold
	}
	hold.attempts++
	backoff := plumbreconcile.Backoff{First: min(retryInterval, limitHoldFirst), Factor: 2, Max: max(interval, min(retryInterval, limitHoldFirst))}
	wait := backoff.Delay(hold.attempts)
	hold.retryAt = h.clock().Add(wait)
	hold.message = fmt.Sprintf("%s; the same source, spec and values are rendered again in %s (attempt %d, backing off up to the interval), or at once when one of them changes",
		err.Error(), wait.Round(time.Second), hold.attempts+1)
	failure := plumbreconcile.Stalled(reason, fmt.Errorf("%s", hold.message)).Polling(wait)
	if !first {
		return failure.WithoutEvent()
	}
	return failure
}

// forget drops key's hold: its render succeeded, failed otherwise, or the
// object is gone.
func (h *limitHolds) forget(key types.NamespacedName) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.holds, key)
}
