package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/fluxcd/pkg/runtime/conditions"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/reconcile"
)

// A HelmRelease's release lifecycle (docs/design/helm.md, "Failures,
// retries and remediation"), with Flux's semantics on Plumb's engine.
//
// An attempt is the sync of one render (status.renderedArtifact's digest)
// at one generation: an install while no release is deployed, an upgrade
// after. Its failures are counted (status.failures, installFailures,
// upgradeFailures) until a new attempt starts: a new render (chart,
// values, post-renderers), a new generation, or a reconcile request.
// After a failed sync of the attempt, the action's strategy decides:
//
//   - RetryOnFailure: the same render is synced again once
//     strategy.retryInterval passed (retryGate's wait), never remediated;
//   - RemediateOnFailure: while retries are left (failures <= retries, or
//     retries < 0), the failure is remediated and the attempt made again
//     right after; once none is left, it is remediated only with
//     remediateLastFailure, and then nothing more happens until a new
//     attempt starts.
//
// A remediation is a rollback (an upgrade with strategy rollback: the
// newest deployed release's render synced again, rollback.go) or an
// uninstall (an install, or strategy uninstall: the inventory deleted
// with the delete hooks, uninstall.go). The Remediated condition records
// it until the next attempt's sync ends. While an attempt waits with no
// retry left, a rolled-back release stays applied and corrected (the
// failed render is never applied again), an uninstalled one stays absent.

// releaseAction is what a run of a HelmRelease does.
type releaseAction int

const (
	// attemptRelease syncs the newest render: an install or an upgrade.
	attemptRelease releaseAction = iota
	// rollbackRelease syncs the newest deployed release's render again.
	rollbackRelease
	// uninstallRelease deletes the release's objects.
	uninstallRelease
	// holdRelease applies nothing: the attempt was uninstalled, or failed
	// with no retry and no remediation left.
	holdRelease
	// correctRelease applies the deployed release's render again while a
	// sync window holds the newest (syncwindow.go): a drift correction
	// (or report) of what runs, never an install or upgrade — no hook,
	// no release in status.history or Helm's storage, no attempt counted.
	correctRelease
)

// releaseRun is what decideRelease made of a HelmRelease's status for one
// run.
type releaseRun struct {
	hr     *helmv2.HelmRelease
	action releaseAction
	// newAttempt: the run's sync of the newest render starts a new
	// attempt, whose failures are counted from 0.
	newAttempt bool
	// verb is the failed attempt's action (install or upgrade) and rem
	// its remediation settings; failures its failures so far.
	verb     string
	rem      helmv2.RemediationOf
	failures int64
	// target is the release a rollback applies again; requested: the
	// rollback is a person's (plumb.dev/rollback, hold.go), not a
	// remediation.
	target    *helmv2.Snapshot
	requested bool
	// next is when the controller looks again after this run failed or
	// was held (retryDecision); nil leaves it to the sync's own rules.
	next *reconcile.RetryDecision
}

// decideRelease is a HelmRelease's first step after its dependencies:
// attempt the newest render, roll back, uninstall, or hold (above); while
// a sync window holds the newest render, correct the deployed release. A
// Kustomization has no release and always syncs.
func (s *syncRun) decideRelease(ctx context.Context) error {
	hr, ok := s.obj.(*helmv2.HelmRelease)
	if !ok || s.rel != nil {
		return nil // a Kustomization, or a rollback holds it (hold.go)
	}
	if s.window != nil && s.window.artifact != nil {
		// The windows hold the newest render, and with it any attempt,
		// retry or remediation of it.
		s.rel = &releaseRun{hr: hr, action: correctRelease}
		return nil
	}
	rel := &releaseRun{hr: hr, action: attemptRelease}
	s.rel = rel
	a, st := hr.Status.RenderedArtifact, &hr.Status
	rendered := conditions.Get(hr, kustomizev1.RenderedCondition)
	if a == nil || (rendered != nil && rendered.ObservedGeneration < hr.Generation) {
		return nil // loadManifests waits for the render
	}
	requested := reconcile.RequestedAt(hr) != st.LastHandledReconcileAt
	rel.newAttempt = requested || st.LastAttemptedDigest != a.Digest || st.LastAttemptedGeneration != hr.Generation
	if rel.newAttempt || st.LastAttemptedReleaseAction == "" || !conditions.IsFalse(hr, helmv2.ReleasedCondition) {
		return nil
	}
	rel.verb = st.LastAttemptedReleaseAction
	strategy := hr.GetUpgradeStrategy()
	rel.rem, rel.failures = hr.GetUpgradeRemediation(), st.UpgradeFailures
	if rel.verb == helmv2.ReleaseActionInstall {
		strategy = hr.GetInstallStrategy()
		rel.rem, rel.failures = hr.GetInstallRemediation(), st.InstallFailures
	}
	if strategy == helmv2.RetryOnFailure {
		return nil // retryGate holds it until retryInterval passed
	}
	exhausted := rel.rem.Exhausted(rel.failures)
	remediated := conditions.Get(hr, helmv2.RemediatedCondition)
	switch {
	case remediated == nil || remediated.Status != metav1.ConditionTrue:
		// The newest failure is not remediated yet, or its remediation
		// failed and is tried again.
		if exhausted && !rel.rem.RemediateLastFailure {
			rel.action = holdRelease
			rel.next = &reconcile.RetryDecision{Exhausted: true}
			return reconcile.Failed(failedReason(rel.verb), fmt.Errorf("%s; %s", releasedMessage(hr),
				rel.exhaustedNote())).WithoutEvent()
		}
		return s.remediate(ctx)
	case !exhausted:
		return nil // remediated, and a retry is left: attempt again now
	case remediated.Reason == helmv2.RollbackSucceededReason:
		// No retry left: the rolled-back release stays applied, and
		// corrected, until a new attempt.
		return s.startRollback()
	}
	rel.action = holdRelease
	rel.next = &reconcile.RetryDecision{Exhausted: true}
	return reconcile.Failed(remediated.Reason, fmt.Errorf("%s; %s", remediated.Message, rel.exhaustedNote())).WithoutEvent()
}

// remediate starts the remediation the failed attempt's settings name.
func (s *syncRun) remediate(ctx context.Context) error {
	if s.rel.verb == helmv2.ReleaseActionUpgrade && s.rel.rem.Strategy == helmv2.RollbackRemediation {
		return s.startRollback()
	}
	return s.uninstallRelease(ctx)
}

// exhaustedNote says that no retry is left and what starts a new attempt.
func (rel *releaseRun) exhaustedNote() string {
	return fmt.Sprintf("no retry left (%s.remediation.retries: %d, %d failure(s)); a new generation, values or chart, or a reconcile request, starts a new attempt",
		rel.verb, rel.rem.Retries, rel.failures)
}

// failedReason is Released's reason for a failed install or upgrade.
func failedReason(verb string) string {
	if verb == helmv2.ReleaseActionInstall {
		return helmv2.InstallFailedReason
	}
	return helmv2.UpgradeFailedReason
}

// releasedMessage is the Released condition's message: why the attempt
// failed.
func releasedMessage(hr *helmv2.HelmRelease) string {
	if c := conditions.Get(hr, helmv2.ReleasedCondition); c != nil {
		return c.Message
	}
	return "the release failed"
}

// countAttempt records, once the sync of an attempt ended, the attempt and
// its outcome: lastAttempted* and, when it failed, one more failure of its
// action. A new attempt starts its counters from 0, and any attempt's end
// clears Remediated, which spoke of the one before. It then decides when
// the controller looks again (afterFailure).
func countAttempt(s *syncRun, hr *helmv2.HelmRelease, verb string) {
	st := &hr.Status
	gen := s.obj.GetGeneration()
	if s.rel == nil || s.rel.newAttempt || st.LastAttemptedDigest != s.digest || st.LastAttemptedGeneration != gen {
		st.Failures, st.InstallFailures, st.UpgradeFailures = 0, 0, 0
	}
	st.LastAttemptedDigest, st.LastAttemptedGeneration, st.LastAttemptedReleaseAction = s.digest, gen, verb
	st.LastAttemptedReleaseActionDuration = &metav1.Duration{Duration: operationDuration(s, time.Now()).Round(time.Millisecond)}
	conditions.Delete(s.out, helmv2.RemediatedCondition)
	if s.op.synced {
		return
	}
	countFailure(s, hr, verb)
}

// countFailure counts a failed attempt of verb (a failed sync, or a
// release whose tests failed): the sync operation marked failed, the
// counters, and when the controller looks again (afterFailure).
func countFailure(s *syncRun, hr *helmv2.HelmRelease, verb string) {
	st := &hr.Status
	markSyncFailed(s)
	st.Failures++
	if verb == helmv2.ReleaseActionInstall {
		st.InstallFailures++
	} else {
		st.UpgradeFailures++
	}
	if s.rel != nil {
		s.rel.afterFailure(hr, verb)
	}
}

// markSyncFailed records a release whose sync failed after its apply (its
// health check) as a failed sync operation in status.sync, as a failed
// apply or hook is: the next try is a new sync operation, with its hooks,
// held by retryGate until the retry interval passed, as Helm's next
// upgrade would be — not a re-check of a sync that succeeded.
func markSyncFailed(s *syncRun) {
	if sp := s.st.Sync; sp != nil && sp.Phase == kustomizev1.PhaseSucceeded {
		now := metav1.Now()
		sp.Phase, sp.FinishedAt = kustomizev1.PhaseFailed, &now
		if s.op.err != nil {
			sp.Message = s.op.err.Error()
		}
	}
}

// afterFailure decides when the controller looks again after a failed
// attempt: after retryInterval (RetryOnFailure), at once to remediate, or
// never, when no retry and no remediation is left (Stalled,
// RetriesExceeded), until a new attempt.
func (rel *releaseRun) afterFailure(hr *helmv2.HelmRelease, verb string) {
	strategy, rem, failures := hr.GetUpgradeStrategy(), hr.GetUpgradeRemediation(), hr.Status.UpgradeFailures
	var interval time.Duration
	if hr.Spec.Upgrade != nil {
		interval = hr.Spec.Upgrade.Strategy.GetRetryInterval()
	}
	if verb == helmv2.ReleaseActionInstall {
		strategy, rem, failures = hr.GetInstallStrategy(), hr.GetInstallRemediation(), hr.Status.InstallFailures
		if hr.Spec.Install != nil {
			interval = hr.Spec.Install.Strategy.GetRetryInterval()
		}
	}
	rel.verb, rel.rem, rel.failures = verb, rem, failures
	switch {
	case strategy == helmv2.RetryOnFailure:
		if interval == 0 {
			interval = (*helmv2.Strategy)(nil).GetRetryInterval()
		}
		rel.next = &reconcile.RetryDecision{After: interval,
			Note: fmt.Sprintf("RetryOnFailure: failure %d, tried again in %s", failures, interval)}
	case !rem.Exhausted(failures) || rem.RemediateLastFailure:
		rel.next = &reconcile.RetryDecision{Note: fmt.Sprintf("failure %d: %s now", failures, remediationVerb(verb, rem))}
	default:
		rel.next = &reconcile.RetryDecision{Exhausted: true, Note: rel.exhaustedNote()}
	}
}

// remediationVerb names the remediation of a failed action.
func remediationVerb(verb string, rem helmv2.RemediationOf) string {
	if verb == helmv2.ReleaseActionUpgrade && rem.Strategy == helmv2.RollbackRemediation {
		return "rolling back"
	}
	return "uninstalling"
}

// releaseDecision is retryDecision's answer for a HelmRelease whose run
// decided when to look again.
func (s *syncRun) releaseDecision() (reconcile.RetryDecision, bool) {
	if s.rel == nil || s.rel.next == nil {
		return reconcile.RetryDecision{}, false
	}
	return *s.rel.next, true
}

// remediationOutcome is the last step of a rollback's run: the sync of
// the rolled-back release succeeded, but the attempt did not, so Ready
// stays False with the remediation's reason (as in Flux), and the
// controller looks again at once while a retry is left.
func (s *syncRun) remediationOutcome(context.Context) error {
	rel := s.rel
	if rel == nil || rel.action != rollbackRelease || rel.requested {
		return nil
	}
	msg := fmt.Sprintf("%s; rolled back to %s@%s (release v%d)", releasedMessage(rel.hr), rel.target.ChartName, rel.target.ChartVersion, rel.target.Version)
	if rel.rem.Exhausted(rel.failures) {
		rel.next = &reconcile.RetryDecision{Exhausted: true}
		msg += "; " + rel.exhaustedNote()
	} else {
		rel.next = &reconcile.RetryDecision{}
		msg += "; retrying the upgrade"
	}
	return reconcile.Failed(helmv2.RollbackSucceededReason, errors.New(msg)).WithoutEvent()
}

// describeRelease is a history entry's description, in Helm's words:
// "Install complete", "Upgrade complete", or `Upgrade "name" failed: why`.
func describeRelease(action, name string, err error) string {
	verb := strings.ToUpper(action[:1]) + action[1:]
	if err == nil {
		return verb + " complete"
	}
	return truncateDescription(fmt.Sprintf("%s %q failed: %s", verb, name, err.Error()))
}

// maxDescription is the CRD's bound on a history entry's description.
const maxDescription = 1024

// truncateDescription keeps a description within maxDescription bytes,
// on a rune boundary.
func truncateDescription(d string) string {
	if len(d) <= maxDescription {
		return d
	}
	cut := maxDescription - len("…")
	for cut > 0 && !utf8.RuneStart(d[cut]) {
		cut--
	}
	return d[:cut] + "…"
}

// releaseFailed fails the run's install or upgrade for a reason found
// inside its sync operation but outside the apply (a failed chart test):
// the operation ends failed, recordRelease records a failed release
// (Released=False, the counters), and the attempt is retried or
// remediated like any failed sync. Call it from a step of the operation
// (ofOperation) before the health check marks it synced; the error it
// returns ends the run.
func (s *syncRun) releaseFailed(ctx context.Context, reason string, err error) error {
	e := reconcile.Failed(reason, err)
	s.op.synced = false
	if s.op.ends(e) {
		s.op.finish(ctx, s)
	}
	return e
}
