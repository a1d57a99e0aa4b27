package controller

import (
	"context"
	"errors"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	"plumb.dev/pkg/reconcile"
)

// operation is the record of the sync operation a run takes part in: the
// operation itself (its start, whether this run made one and how it
// ended), which both kinds' histories record once it ends (history.go,
// recordRelease), and this run's part in spec.retry's series of them
// (retry.go).
type operation struct {
	// made is set once applyPlan starts a sync operation (not a resync of
	// one that succeeded); err is the error that ended it, synced says it
	// got through the health check.
	made   bool
	err    error
	synced bool
	// started is when the operation started (syncRun.operationStart), nil
	// until it is asked.
	started *metav1.Time
	// finish records the end of the operation, once (reconcileObject);
	// finished says it ran.
	finish   func(context.Context, *syncRun)
	finished bool
	// retryHeld: spec.retry's series held this run back (retryGate);
	// attemptFailed: a step of the sync failed in this run, an attempt of
	// the series (syncRun.retried).
	retryHeld, attemptFailed bool
}

// ends takes the outcome of a step of the operation, err, and reports
// whether finish runs now: the operation this run made failed, or got
// through its last step (synced), for the first time.
func (o *operation) ends(err error) bool {
	if !o.made || o.finished {
		return false
	}
	if err != nil {
		o.err = err
	}
	if (err != nil || o.synced) && o.finish != nil {
		o.finished = true
		return true
	}
	return false
}

// outcome is the Ready reason the operation ended with: Succeeded, or
// the reason of the error that ended it.
func (o *operation) outcome() string {
	if o.synced {
		return meta.SucceededReason
	}
	var e *reconcile.Error
	if errors.As(o.err, &e) && e.Reason != "" {
		return e.Reason
	}
	return kustomizev1.SyncFailedReason
}
