package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	"plumb.dev/pkg/events"
	"plumb.dev/pkg/reconcile"
)

// uninstallRelease is an uninstall remediation (remediation.go): what
// `helm uninstall` does, with the deletion's machinery (deletehooks.go)
// and spec.uninstall's options — the failed release's pre-delete hooks
// (unless disableHooks), every object of the inventory deleted with
// deletionPropagation, then its post-delete hooks once they are gone. It
// runs over several reconciles like a deletion, status.sync recording
// where it stands (phases PreDelete and PostDelete, startedAt its start);
// a failure is Remediated=False UninstallFailed, and the uninstall is
// made again, from its start, after the retry interval. Once done, the
// inventory is empty, status.history emptied (as Helm deletes its release
// records) or, with keepHistory, its entries marked uninstalled, and
// Remediated=True UninstallSucceeded: the next attempt is an install.
// Objects kept by helm.sh/resource-policy: keep, or plumb.dev/prune:
// disabled, stay, as under helm uninstall.
func (s *syncRun) uninstallRelease(ctx context.Context) error {
	rel := s.rel
	rel.action = uninstallRelease
	u := rel.hr.Spec.Uninstall
	if u == nil {
		u = &helmv2.Uninstall{}
	}
	s.spec.DeletionPropagation = metav1.DeletionPropagation(propagationOf(u.DeletionPropagation))
	if u.Timeout != nil {
		s.spec.Timeout = u.Timeout.Duration
	}
	start := metav1.NewTime(time.Now().Truncate(time.Second))
	if prev := s.prev.Sync; prev != nil && prev.StartedAt != nil &&
		(prev.Phase == kustomizev1.PhasePreDelete || prev.Phase == kustomizev1.PhasePostDelete) {
		start = *prev.StartedAt // an uninstall under way
	}
	d := &deletion{s: s, inv: s.prev.Inventory, startedAt: &start}
	if s.st.Sync == nil || s.st.Sync.StartedAt == nil || !s.st.Sync.StartedAt.Equal(&start) {
		if err := d.report(ctx, kustomizev1.PhasePreDelete, 0, metav1.ConditionUnknown, meta.ProgressingReason,
			"uninstalling after the failed "+rel.verb); err != nil {
			return err
		}
	}
	if d.inv != nil && !u.DisableHooks {
		p, err := d.plan(ctx)
		if err == nil && len(p.Phases) > 0 {
			err = d.run(ctx, p)
		}
		if err != nil {
			return s.uninstallFailed(err)
		}
	}
	remaining, err := d.prune(ctx)
	if err != nil {
		return s.uninstallFailed(err)
	}
	if len(remaining) > 0 && !u.DisableWait {
		if time.Now().Before(start.Add(s.spec.Timeout)) {
			return reconcile.Waiting(meta.ProgressingReason, s.r.DeleteHookPoll,
				fmt.Errorf("uninstalling: waiting for %d deleted object(s) to be gone", len(remaining))).WithoutEvent()
		}
		s.r.Events.Record(s.obj, events.SeverityError, kustomizev1.TerminationTimeoutReason, fmt.Sprintf(
			"uninstall: %d deleted object(s) still there after %s; no longer waiting for them", len(remaining), s.spec.Timeout))
	}
	return s.uninstalled(u.KeepHistory)
}

// uninstallFailed records a failed uninstall: Remediated=False
// UninstallFailed, one more failure; a delete hook still running is no
// failure, only a wait.
func (s *syncRun) uninstallFailed(err error) error {
	var pending *deletionPending
	if errors.As(err, &pending) {
		if s.st.Sync == nil || s.st.Sync.Phase != kustomizev1.PhaseFailed {
			return reconcile.Waiting(meta.ProgressingReason, pending.after, errors.New(pending.why)).WithoutEvent()
		}
		err = errors.New(pending.why)
	}
	msg := "uninstall after the failed " + s.rel.verb + " failed: " + err.Error()
	hr := s.out.(*helmv2.HelmRelease)
	hr.Status.Failures++
	conditions.MarkFalse(s.out, helmv2.RemediatedCondition, helmv2.UninstallFailedReason, "%s", msg)
	s.r.Events.Record(s.obj, events.SeverityError, helmv2.UninstallFailedReason, msg)
	s.rel.next = &reconcile.RetryDecision{After: s.spec.RetryInterval}
	return reconcile.Failed(helmv2.UninstallFailedReason, errors.New(msg)).WithoutEvent()
}

// uninstalled records a finished uninstall (uninstallRelease) and ends the
// run: at once to the next attempt while a retry is left, else held.
func (s *syncRun) uninstalled(keepHistory bool) error {
	rel := s.rel
	hr := s.out.(*helmv2.HelmRelease)
	s.st.Inventory, s.st.Sync, s.st.LastAppliedRevision = nil, nil, ""
	if keepHistory {
		history := append([]helmv2.Snapshot(nil), hr.Status.History...)
		for i := range history {
			history[i].Status = helmv2.ReleaseStatusUninstalled
		}
		if len(history) > 0 {
			history[0].Description = "Uninstallation complete"
		}
		hr.Status.History = history
	} else {
		hr.Status.History = nil
	}
	msg := fmt.Sprintf("uninstalled after the failed %s: %s", rel.verb, releasedMessage(rel.hr))
	conditions.MarkTrue(s.out, helmv2.RemediatedCondition, helmv2.UninstallSucceededReason, "%s", msg)
	s.r.Events.Record(s.obj, events.SeverityInfo, helmv2.UninstallSucceededReason, msg)
	conditions.Delete(s.out, kustomizev1.HealthyCondition)
	if rel.rem.Exhausted(rel.failures) {
		rel.next = &reconcile.RetryDecision{Exhausted: true}
		msg += "; " + rel.exhaustedNote()
	} else {
		rel.next = &reconcile.RetryDecision{}
		msg += "; installing again"
	}
	return reconcile.Failed(helmv2.UninstallSucceededReason, errors.New(msg)).WithoutEvent()
}
