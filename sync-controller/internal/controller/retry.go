package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	"plumb.dev/pkg/reconcile"
)

// A Kustomization's spec.retry (docs/design/sync-engine.md, "Retry"): a
// failure of the sync itself — apply, hooks, prune, the health check — is
// retried after an exponential backoff, up to a limit, as Argo CD retries a
// failed sync operation. status.retry holds the series: the attempt and
// when the next is due. A series belongs to the artifact and generation of
// status.sync; a new revision, a spec change or a reconcile request starts
// a new one, and a sync that gets through its health check ends it.
// Without spec.retry nothing here applies: a failed sync is tried again
// every retryInterval (retryPending).

// retried wraps a step of the sync (apply, prune, health): a Retry failure
// is one failed attempt of the series; the success of the last step (the
// health check) ends the series.
func (s *syncRun) retried(step func(context.Context) error, last bool) func(context.Context) error {
	return func(ctx context.Context) error {
		err := step(ctx)
		if s.spec.Retry == nil || s.op.retryHeld {
			return err
		}
		switch {
		case err != nil && reconcile.PolicyOf(err) == reconcile.Retry:
			s.st.Retry = s.nextRetry(time.Now())
			s.op.attemptFailed = true
		case err == nil && last:
			s.st.Retry = nil
		}
		return err
	}
}

// retrySeries is the series (status.retry) this run continues: the stored
// one when the last sync was of this artifact and generation and no
// reconcile was requested since; nil when a new one starts.
func (s *syncRun) retrySeries() *kustomizev1.RetryStatus {
	prev, r := s.prev.Sync, s.prev.Retry
	if r == nil || prev == nil || prev.Digest != s.digest || prev.Generation != s.obj.GetGeneration() ||
		reconcile.RequestedAt(s.obj) != s.app.lastHandledReconcileAt() {
		return nil
	}
	return r
}

// backoffHolds reports whether the series holds the sync back: its next
// retry is not due yet, or no retry is left.
func (s *syncRun) backoffHolds() bool {
	r := s.retrySeries()
	return r != nil && (r.NextAttemptAt == nil || time.Now().Before(r.NextAttemptAt.Time))
}

// backoffGate is applyPlan's gate under spec.retry. While the series holds
// the sync back, whatever woke the controller (a watch event of an applied
// object, render-controller's status), the run repeats the last attempt's
// verdict — Ready's reason and message as stored, no event — and
// retryDecision times the next look from status.retry. A new series
// clears the last one from the status.
func (s *syncRun) backoffGate() error {
	if !s.backoffHolds() {
		if s.retrySeries() == nil {
			s.st.Retry = nil
		}
		return nil
	}
	s.op.retryHeld = true
	reason, msg := kustomizev1.SyncFailedReason, "the last sync failed"
	if c := conditions.Get(s.obj, meta.ReadyCondition); c != nil && c.Status == metav1.ConditionFalse {
		reason, msg = c.Reason, c.Message
	}
	return reconcile.Failed(reason, errors.New(msg)).WithoutEvent()
}

// nextRetry is the series after a failed attempt at now: the next retry
// and when it is due, or, when spec.retry.limit allows none, the number of
// retries made and no next one. The due time is rounded up to the second,
// since status keeps seconds: the wait is never shorter than the backoff.
func (s *syncRun) nextRetry(now time.Time) *kustomizev1.RetryStatus {
	policy := s.spec.Retry
	var made int64
	if r := s.retrySeries(); r != nil {
		made = r.Attempt
	}
	if !policy.Allows(made) {
		return &kustomizev1.RetryStatus{Attempt: made}
	}
	first, factor, maxDelay := policy.GetBackoff()
	due := now.Add(reconcile.Backoff{First: first, Factor: factor, Max: maxDelay}.Delay(made + 1))
	if rounded := due.Truncate(time.Second); rounded.Before(due) {
		due = rounded.Add(time.Second)
	}
	at := metav1.NewTime(due)
	return &kustomizev1.RetryStatus{Attempt: made + 1, NextAttemptAt: &at}
}

// retryDecision is the skeleton's RetryDelay: under spec.retry, a failure
// of the sync (or a run the series held back) comes back when status.retry
// says, or never once the limit is reached (Stalled, RetriesExceeded). Any
// other failure — the artifact's download, a render failure reported by
// report — keeps retryInterval.
func (s *syncRun) retryDecision() (reconcile.RetryDecision, bool) {
	r := s.st.Retry
	if s.spec.Retry == nil || r == nil || !(s.op.attemptFailed || s.op.retryHeld) {
		return reconcile.RetryDecision{}, false
	}
	var d reconcile.RetryDecision
	if r.NextAttemptAt == nil {
		d.Exhausted = true
	} else {
		d.After = time.Until(r.NextAttemptAt.Time)
	}
	if s.op.attemptFailed {
		// A held run repeats the stored message, which has the note.
		d.Note = retryNote(r, s.spec.Retry.Limit)
	}
	return d, true
}

// retryNote says where the series stands, for Ready's message: Argo CD's
// "Retrying attempt #n at …" and "retried n times".
func retryNote(r *kustomizev1.RetryStatus, limit int64) string {
	const restart = "a new revision, a spec change or a reconcile request syncs again"
	switch {
	case r.NextAttemptAt != nil && limit < 0:
		return fmt.Sprintf("retry %d at %s", r.Attempt, r.NextAttemptAt.UTC().Format(time.RFC3339))
	case r.NextAttemptAt != nil:
		return fmt.Sprintf("retry %d of %d at %s", r.Attempt, limit, r.NextAttemptAt.UTC().Format(time.RFC3339))
	case limit == 0:
		return "not retried: spec.retry.limit is 0; " + restart
	}
	times := fmt.Sprintf("%d times", r.Attempt)
	if r.Attempt == 1 {
		times = "once"
	}
	return fmt.Sprintf("retried %s, spec.retry.limit; %s", times, restart)
}
