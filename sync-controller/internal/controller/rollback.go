package controller

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/fluxcd/pkg/runtime/conditions"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	helmv2 "plumb.dev/api/helm/v2"
	"plumb.dev/api/meta"
	"plumb.dev/pkg/events"
	"plumb.dev/pkg/reconcile"
)

// A rollback (remediation.go) is a sync of the newest deployed release's
// render, with Helm's rollback hooks instead of the upgrade's and the
// rollback's settings (spec.rollback): it applies what that release
// applied and prunes what the failed upgrade added, as `helm rollback`
// does. Plumb keeps that render: render-controller stores each render as
// <kind>/<namespace>/<name>/<sha256 hex>.yaml and keeps the files of the
// releases of status.history whatever its retention
// (render-controller's releaseDigests), so sync-controller downloads it
// from the folder of the current render, by the digest the history
// records, and verifies it by that digest.

// startRollback makes the run a rollback to the newest deployed release.
// With none (the history lost it), the rollback fails.
func (s *syncRun) startRollback() error {
	rel := s.rel
	for i := range rel.hr.Status.History {
		if h := &rel.hr.Status.History[i]; h.Status == helmv2.ReleaseStatusDeployed {
			rel.target = h
			break
		}
	}
	if rel.target == nil || rel.hr.Status.RenderedArtifact == nil {
		err := errors.New("no deployed release in status.history to roll back to")
		conditions.MarkFalse(s.out, helmv2.RemediatedCondition, helmv2.RollbackFailedReason, "%s", err.Error())
		return reconcile.Failed(helmv2.RollbackFailedReason, err)
	}
	if rel.target.Digest == "" {
		// An adopted release (helmadopt.go): Helm's storage holds its
		// manifest, but Plumb applies only renders it made and verified.
		err := fmt.Errorf("release v%d, the one to roll back to, was adopted from Helm's storage: Plumb has no render of it to apply again", rel.target.Version)
		conditions.MarkFalse(s.out, helmv2.RemediatedCondition, helmv2.RollbackFailedReason, "%s", err.Error())
		return reconcile.Failed(helmv2.RollbackFailedReason, err)
	}
	rel.action = rollbackRelease
	s.rollbackSettings()
	return nil
}

// rollbackSettings gives a rollback's run (a remediation's, or a
// person's: hold.go) the rollback's settings.
func (s *syncRun) rollbackSettings() {
	rel := s.rel
	s.install = false
	// The rollback's own settings, whatever the install's or upgrade's
	// say: spec.timeout unless rollback.timeout, a wait for health unless
	// rollback.disableWait.
	s.spec.Timeout, s.spec.Wait = rel.hr.GetTimeout().Duration, true
	// Not the upgrade's switches either (its hooks, force, cleanupOnFail):
	// only the namespace the install created stays in the render.
	s.spec.Switches, s.spec.Force = actionSwitches{CreateNamespace: s.spec.Switches.CreateNamespace}, false
	if rb := rel.hr.Spec.Rollback; rb != nil {
		if rb.Timeout != nil {
			s.spec.Timeout = rb.Timeout.Duration
		}
		s.spec.Wait = !rb.DisableWait
		s.spec.Force = s.spec.Force || rb.Force
	}
}

// rollbackArtifact is the artifact of the rollback's target, in the
// folder of current (the render the HelmRelease serves now).
func (rel *releaseRun) rollbackArtifact(current *meta.Artifact) *meta.Artifact {
	t := rel.target
	a := besideArtifact(current, t.Digest, t.ChartVersion)
	a.Metadata = map[string]string{
		helmv2.ArtifactChartNameKey:    t.ChartName,
		helmv2.ArtifactChartVersionKey: t.ChartVersion,
		helmv2.ArtifactConfigDigestKey: t.ConfigDigest,
	}
	return a
}

// rollbackHooks says whether the rollback runs Helm's rollback hooks.
func (rel *releaseRun) rollbackHooks() bool {
	return rel.hr.Spec.Rollback == nil || !rel.hr.Spec.Rollback.DisableHooks
}

// recordRollback records a rollback's sync as Helm records `helm
// rollback`: a new release, one version more, with the target's chart,
// values and render, deployed (the target and every other deployed
// release superseded; the failed upgrade stays failed), and
// Remediated=True RollbackSucceeded. A failed rollback is a failed
// release (its retry updates it) and Remediated=False RollbackFailed, one
// more failure; the rollback is tried again after the retry interval.
func recordRollback(s *syncRun, hr *helmv2.HelmRelease) {
	t := *s.rel.target
	now := metav1.Now()
	history := append([]helmv2.Snapshot(nil), hr.Status.History...)
	if len(history) == 0 || history[0].Digest != t.Digest || history[0].Status != helmv2.ReleaseStatusFailed {
		entry := t
		entry.Version = t.Version + 1
		if len(history) > 0 {
			entry.Version = history[0].Version + 1
		}
		history = append([]helmv2.Snapshot{entry}, history...)
	}
	h := &history[0]
	h.LastDeployed = now
	what := fmt.Sprintf("rollback to %s@%s (release %s/%s v%d, as v%d)", t.ChartName, t.ChartVersion, t.Namespace, t.Name, t.Version, h.Version)
	h.Description = rollbackDescription(t.Version)
	if s.rel.requested {
		// A person's rollback (hold.go): RolledBack says so, Remediated
		// stays about remediations.
		recordRequestedRollback(s, hr, history, what)
		return
	}
	if s.op.synced {
		h.Status = helmv2.ReleaseStatusDeployed
		for i := 1; i < len(history); i++ {
			if history[i].Status == helmv2.ReleaseStatusDeployed {
				history[i].Status = helmv2.ReleaseStatusSuperseded
			}
		}
		conditions.MarkTrue(s.out, helmv2.RemediatedCondition, helmv2.RollbackSucceededReason, "%s succeeded", what)
		s.r.Events.Record(s.obj, events.SeverityInfo, helmv2.RollbackSucceededReason, what+" succeeded", events.WithRevision(s.revision))
	} else {
		h.Status = helmv2.ReleaseStatusFailed
		msg := "the sync did not complete"
		if s.op.err != nil {
			msg = s.op.err.Error()
		}
		h.Description = truncateDescription(fmt.Sprintf("%s failed: %s", rollbackDescription(t.Version), msg))
		conditions.MarkFalse(s.out, helmv2.RemediatedCondition, helmv2.RollbackFailedReason, "%s failed: %s", what, msg)
		s.r.Events.Record(s.obj, events.SeverityError, helmv2.RollbackFailedReason, what+" failed: "+msg, events.WithRevision(s.revision))
		hr.Status.Failures++
		markSyncFailed(s)
	}
	hr.Status.History = trimHistory(history)
}

// rollbackDescription is the description of a rollback's release, as
// Helm words it; rollbackTargetOf reads it back.
func rollbackDescription(target int) string { return fmt.Sprintf("Rollback to %d", target) }

// rollbackTargetOf returns the version a release rolled back to, when it
// is a rollback's (its description is rollbackDescription's, "failed: …"
// after it when it failed): its record in Helm's storage is a copy of
// that version's.
func rollbackTargetOf(h helmv2.Snapshot) (int, bool) {
	rest, ok := strings.CutPrefix(h.Description, "Rollback to ")
	if !ok {
		return 0, false
	}
	digits, _, _ := strings.Cut(rest, " ")
	v, err := strconv.Atoi(digits)
	return v, err == nil && v > 0
}

// recordRequestedRollback ends recordRollback for a person's rollback
// (plumb.dev/rollback, hold.go): the release deployed, or failed with a
// RollbackFailed event and one more failure, as a remediation's, but
// without the Remediated condition.
func recordRequestedRollback(s *syncRun, hr *helmv2.HelmRelease, history []helmv2.Snapshot, what string) {
	h := &history[0]
	if s.op.synced {
		h.Status = helmv2.ReleaseStatusDeployed
		for i := 1; i < len(history); i++ {
			if history[i].Status == helmv2.ReleaseStatusDeployed {
				history[i].Status = helmv2.ReleaseStatusSuperseded
			}
		}
	} else {
		h.Status = helmv2.ReleaseStatusFailed
		msg := "the sync did not complete"
		if s.op.err != nil {
			msg = s.op.err.Error()
		}
		h.Description = truncateDescription(fmt.Sprintf("%s failed: %s", rollbackDescription(s.rel.target.Version), msg))
		s.r.Events.Record(s.obj, events.SeverityError, helmv2.RollbackFailedReason, what+" failed: "+msg, events.WithRevision(s.revision))
		hr.Status.Failures++
		markSyncFailed(s)
	}
	hr.Status.History = trimHistory(history)
}
