package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/diff"
	"plumb.dev/pkg/events"
	"plumb.dev/pkg/message"
)

// maxDriftPaths bounds status.drift.paths.
const maxDriftPaths = 20

// maxEventValueLen bounds Before and After of an event change, in bytes,
// marker included (message.TruncateTo): a drifted field can hold a whole
// ConfigMap file, and an event stays small.
const maxEventValueLen = 1024

// eventChanges converts the changes of one object (its object.ID text) to
// the changes of a DriftDetected or DriftCorrected event, shortening values
// longer than maxEventValueLen. managers names who made each changed field
// by its path (engine.Result.FieldManagers): who changed it.
func eventChanges(object string, changes []diff.Change, managers map[string]string) []events.Change {
	out := make([]events.Change, len(changes))
	for i, c := range changes {
		out[i] = events.Change{Object: object, Path: c.Path,
			Before: message.TruncateTo(c.Before, maxEventValueLen), After: message.TruncateTo(c.After, maxEventValueLen),
			Manager: managers[c.Path]}
	}
	return out
}

// reportDrift records what differed from Git in status, events and metrics.
// Under driftPolicy Correct the difference is already reverted; under Report
// it stays, with Drifted=True, and is announced once until it changes.
// Values substituted from Secrets are redacted first (secretRedactor).
func (s *syncRun) reportDrift(ctx context.Context) {
	report := s.spec.DriftPolicy == kustomizev1.DriftPolicyReport
	if len(s.tally.drifted) == 0 {
		conditions.Delete(s.out, kustomizev1.DriftedCondition)
		if s.st.Drift != nil {
			s.st.Drift.Count = 0
			s.st.Drift.Paths = nil
		}
		return
	}

	redactor := s.secretRedactor(ctx)
	var changes []events.Change
	var paths []string
	for _, res := range s.tally.drifted {
		id := res.ID.String()
		redacted := redactor.Changes(res.Changes)
		changes = append(changes, eventChanges(id, redacted, res.FieldManagers)...)
		for _, c := range redacted {
			paths = append(paths, id+":"+c.Path)
		}
	}
	slices.Sort(paths)
	shownPaths, more := diff.Truncate(paths, maxDriftPaths)
	previous := s.prev.Drift
	unchangedReport := report && previous != nil && slices.Equal(previous.Paths, shownPaths) &&
		conditions.IsTrue(s.obj, kustomizev1.DriftedCondition)

	now := metav1.Now()
	s.st.Drift = &kustomizev1.DriftStatus{Count: len(s.tally.drifted), LastDetected: &now, Paths: shownPaths}
	if unchangedReport {
		s.st.Drift.LastDetected = previous.LastDetected
		return
	}

	shown, note := diff.Truncate(changes, s.r.MaxDriftChanges)
	message := fmt.Sprintf("%d object(s) differ from %s: %s", len(s.tally.drifted), s.app.desiredState(), strings.Join(shownPaths, ", "))
	if more != "" {
		message += " " + more
	}
	if note != "" {
		message += " (" + note + " not listed)"
	}
	s.r.Metrics.driftFound(s.owner)
	severity := events.SeverityInfo
	if report {
		severity = events.SeverityError
	}
	s.r.Events.Record(s.obj, severity, kustomizev1.DriftDetectedReason, message,
		events.WithRevision(s.revision), events.WithChanges(shown))

	if report {
		conditions.MarkTrue(s.out, kustomizev1.DriftedCondition, kustomizev1.DriftDetectedReason, "%s", message)
		return
	}
	conditions.Delete(s.out, kustomizev1.DriftedCondition)
	metadata := map[string]string{"objects": fmt.Sprint(len(s.tally.drifted))}
	latency := ""
	var seen time.Duration
	if !s.driftSeen.IsZero() {
		d := time.Since(s.driftSeen)
		seen = d
		metadata["latency"] = d.String()
		latency = fmt.Sprintf(" %s after the foreign change was seen", d.Round(time.Millisecond))
	}
	s.r.Metrics.driftReverted(s.owner, seen)
	s.r.Events.Record(s.obj, events.SeverityInfo, kustomizev1.DriftCorrectedReason,
		fmt.Sprintf("reverted %d object(s) to %s%s", len(s.tally.drifted), s.app.desiredState(), latency),
		events.WithRevision(s.revision), events.WithChanges(shown), events.WithMetadata(metadata))
}

// secretRedactor returns what hides the values taken from Secrets
// (application.redactor), read with the controller's identity, uncached,
// and only when there is drift to report. A Secret that cannot be read
// hides every value, and says so in the log.
func (s *syncRun) secretRedactor(ctx context.Context) *diff.Redactor {
	redactor, err := s.app.redactor(ctx, s.r.reader())
	if err != nil {
		log.FromContext(ctx).Error(err, "every drifted value is redacted")
	}
	return redactor
}
