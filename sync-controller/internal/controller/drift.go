package controller

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/diff"
	"plumb.dev/pkg/events"
)

// maxDriftPaths bounds status.drift.paths.
const maxDriftPaths = 20

// reportDrift records what differed from Git in status, events and metrics.
// Under driftPolicy Correct the difference is already reverted; under Report
// it stays, with Drifted=True, and is announced once until it changes.
func (s *syncRun) reportDrift() {
	report := s.obj.GetDriftPolicy() == kustomizev1.DriftPolicyReport
	if len(s.drifted) == 0 {
		conditions.Delete(s.out, kustomizev1.DriftedCondition)
		if s.out.Status.Drift != nil {
			s.out.Status.Drift.Count = 0
			s.out.Status.Drift.Paths = nil
		}
		return
	}

	var changes []events.Change
	var paths []string
	for _, res := range s.drifted {
		id := res.ID.String()
		changes = append(changes, diff.ToEvents(id, res.Changes)...)
		for _, c := range res.Changes {
			paths = append(paths, id+":"+c.Path)
		}
	}
	slices.Sort(paths)
	shownPaths, more := diff.Truncate(paths, maxDriftPaths)
	previous := s.obj.Status.Drift
	unchangedReport := report && previous != nil && slices.Equal(previous.Paths, shownPaths) &&
		conditions.IsTrue(s.obj, kustomizev1.DriftedCondition)

	now := metav1.Now()
	s.out.Status.Drift = &kustomizev1.DriftStatus{Count: len(s.drifted), LastDetected: &now, Paths: shownPaths}
	if unchangedReport {
		s.out.Status.Drift.LastDetected = previous.LastDetected
		return
	}

	shown, note := diff.Truncate(changes, s.r.MaxDriftChanges)
	message := fmt.Sprintf("%d object(s) differ from Git: %s", len(s.drifted), strings.Join(shownPaths, ", "))
	if more != "" {
		message += " " + more
	}
	if note != "" {
		message += " (" + note + " not listed)"
	}
	driftDetected.WithLabelValues(s.obj.Namespace, s.obj.Name).Inc()
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
	driftCorrected.WithLabelValues(s.obj.Namespace, s.obj.Name).Inc()
	metadata := map[string]string{"objects": fmt.Sprint(len(s.drifted))}
	latency := ""
	if !s.driftSeen.IsZero() {
		d := time.Since(s.driftSeen)
		driftCorrection.Observe(d.Seconds())
		metadata["latency"] = d.String()
		latency = fmt.Sprintf(" %s after the foreign change was seen", d.Round(time.Millisecond))
	}
	s.r.Events.Record(s.obj, events.SeverityInfo, kustomizev1.DriftCorrectedReason,
		fmt.Sprintf("reverted %d object(s) to Git%s", len(s.drifted), latency),
		events.WithRevision(s.revision), events.WithChanges(shown), events.WithMetadata(metadata))
}
