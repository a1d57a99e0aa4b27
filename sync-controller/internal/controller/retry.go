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
// Without spec.retry there is no series: a failed sync is tried again
// every retryInterval (retries.pending).

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
			s.st.Retry = s.retries().next(time.Now())
			s.op.attemptFailed = true
		case err == nil && last:
			s.st.Retry = nil
		}
		return err
	}
}

// retryGate is applyPlan's gate: it holds back a failed sync of this
// artifact and generation until it is due again, whatever wakes the
// controller before that; a new artifact, a spec change or a reconcile
// request starts a sync at once. Under spec.retry, while the series holds
// the sync back (a watch event of an applied object, render-controller's
// status), the run repeats the last attempt's verdict — Ready's reason
// and message as stored, no event — and retryDecision times the next look
// from status.retry; a new series clears the last one from the status.
// Without spec.retry the sync waits until retryInterval passed, and no
// series is kept: one left from a spec.retry since removed goes.
func (s *syncRun) retryGate() error {
	rs := s.retries()
	if rs.policy == nil {
		s.st.Retry = nil
		if wait, prev := rs.pending(); wait > 0 {
			return reconcile.Waiting(kustomizev1.SyncFailedReason, wait,
				fmt.Errorf("%s (next try in %s)", prev.Message, wait.Round(time.Second)))
		}
		return nil
	}
	if !rs.backoffHolds() {
		if rs.series() == nil {
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

// retries is where the retries of a failed sync of the run's artifact and
// generation stand, as status records them. It is worked out when asked:
// the artifact is known only once the manifests are loaded.
func (s *syncRun) retries() retries {
	return retries{
		policy: s.spec.Retry, interval: s.spec.RetryInterval,
		sync: s.prev.Sync, stored: s.prev.Retry,
		digest: s.digest, generation: s.obj.GetGeneration(),
		requested: reconcile.RequestedAt(s.obj) != s.app.lastHandledReconcileAt(),
	}
}

// retries is what decides whether a failed sync of an artifact and
// generation is tried again now: spec.retry's series (status.retry), or
// without spec.retry the retryInterval since it failed.
type retries struct {
	// policy is spec.retry, nil without it; interval is retryInterval.
	policy   *kustomizev1.RetryStrategy
	interval time.Duration
	// sync and stored are status.sync and status.retry as stored.
	sync   *kustomizev1.SyncProgress
	stored *kustomizev1.RetryStatus
	// digest and generation are what the run syncs; requested says that
	// a reconcile was requested since the last one handled.
	digest     string
	generation int64
	requested  bool
}

// ofThisSync says that status.sync records a sync of the same artifact
// and generation, and no reconcile was requested since.
func (rs retries) ofThisSync() bool {
	return rs.sync != nil && rs.sync.Digest == rs.digest && rs.sync.Generation == rs.generation && !rs.requested
}

// series is the series (status.retry) this run continues: the stored one
// when the last sync was of this artifact and generation and no reconcile
// was requested since; nil when a new one starts.
func (rs retries) series() *kustomizev1.RetryStatus {
	if rs.stored == nil || !rs.ofThisSync() {
		return nil
	}
	return rs.stored
}

// backoffHolds reports whether the series holds the sync back: its next
// retry is not due yet, or no retry is left.
func (rs retries) backoffHolds() bool {
	r := rs.series()
	return r != nil && (r.NextAttemptAt == nil || time.Now().Before(r.NextAttemptAt.Time))
}

// pending returns, without spec.retry, how long until a failed sync of the
// same artifact and generation is due to be tried again, and status.sync
// that records it.
func (rs retries) pending() (time.Duration, *kustomizev1.SyncProgress) {
	if !rs.ofThisSync() || rs.sync.Phase != kustomizev1.PhaseFailed || rs.sync.FinishedAt == nil {
		return 0, nil
	}
	return rs.interval - time.Since(rs.sync.FinishedAt.Time), rs.sync
}

// holds reports whether a failed sync of this artifact and generation
// waits to be tried again: by spec.retry's backoff (backoffHolds), or
// without it until retryInterval passed (pending).
func (rs retries) holds() bool {
	if rs.policy != nil {
		return rs.backoffHolds()
	}
	wait, _ := rs.pending()
	return wait > 0
}

// next is the series after a failed attempt at now: the next retry and
// when it is due, or, when spec.retry.limit allows none, the number of
// retries made and no next one. The due time is rounded up to the second,
// since status keeps seconds: the wait is never shorter than the backoff.
func (rs retries) next(now time.Time) *kustomizev1.RetryStatus {
	var made int64
	if r := rs.series(); r != nil {
		made = r.Attempt
	}
	if !rs.policy.Allows(made) {
		return &kustomizev1.RetryStatus{Attempt: made}
	}
	first, factor, maxDelay := rs.policy.GetBackoff()
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
	if d, ok := s.releaseDecision(); ok {
		return d, true // a HelmRelease's release lifecycle (remediation.go)
	}
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
