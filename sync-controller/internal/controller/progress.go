package controller

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	ctrl "sigs.k8s.io/controller-runtime"

	"plumb.dev/api/meta"
	"plumb.dev/sync-controller/internal/engine"
)

// progressEvery bounds how often a health wait rewrites the progress it
// shows: often enough to follow a rollout, rarely enough that a thousand
// Deployments rolling out are not a status write per watch event.
const progressEvery = time.Second

// progressNamed is how many objects still waited on a progress message
// names; the rest are counted.
const progressNamed = 3

// progress is what a running sync says of itself in Ready and Reconciling
// (and in status.sync and status.inventory) while it runs: where it is,
// how much is applied, and during a health wait what it waits for.
type progress struct {
	// phase and wave are the step running; phase is "" once every wave
	// is applied (the final health check of spec.wait).
	phase string
	wave  int
	// step and steps count the plan's steps, for "wave 2 (3 of 4)".
	step, steps int
	// waiting are the objects a health wait still waits on.
	waiting []engine.HealthReport
	// written is when progress was last written, shown is its text.
	written time.Time
	shown   string
}

// message says where the sync is: "running Sync phase, wave 1 (2 of 3) of
// revision main@sha1:…: 28 of 29 objects applied; waiting for 1 object to
// be healthy: Ingress/web/web is Progressing: no address yet". revision
// is the sync's; applied and total count its objects applied so far and
// in all.
func (p *progress) message(revision string, applied, total int) string {
	var b strings.Builder
	if p.phase == "" {
		fmt.Fprintf(&b, "applied revision %s: %d of %d objects", revision, applied, total)
	} else {
		fmt.Fprintf(&b, "running %s phase, wave %d (%d of %d) of revision %s: %d of %d objects applied",
			p.phase, p.wave, p.step, p.steps, revision, applied, total)
	}
	if n := len(p.waiting); n > 0 {
		noun := "objects"
		if n == 1 {
			noun = "object"
		}
		fmt.Fprintf(&b, "; waiting for %d %s to be healthy: ", n, noun)
		for i, r := range p.waiting {
			if i == progressNamed {
				fmt.Fprintf(&b, "; and %d more", n-progressNamed)
				break
			}
			if i > 0 {
				b.WriteString("; ")
			}
			fmt.Fprintf(&b, "%s is %s", r.ID, r.Result)
		}
	}
	return b.String()
}

// progressMessage is the run's progress message (progress.message).
func (s *syncRun) progressMessage() string {
	objs := s.inventoryObjects()
	return s.prog.message(s.revision, len(s.tally.appliedOf(objs)), len(objs))
}

// writeProgress records the step in progress — in status.sync, so that a
// restarted controller resumes from it, and in Ready and Reconciling, so
// that `kubectl get` shows it — and writes the status. hold: the step is
// the first this run runs and starts no hook, so a restart would only run
// it again, and the write may wait for the run to last (statusWriter.hold); a
// step that starts hooks is recorded first, so that a restart knows them
// for its sync's (the sync ID, from status.sync.startedAt), and a later
// step's record holds what is applied so far.
func (s *syncRun) writeProgress(ctx context.Context, phase string, wave, step, steps int, hold bool) error {
	s.st.Sync.Phase = phase
	s.st.Sync.Wave = wave
	s.prog.phase, s.prog.wave, s.prog.step, s.prog.steps, s.prog.waiting = phase, wave, step, steps, nil
	return s.publishProgress(ctx, hold)
}

// publishProgress writes the progress message into Reconciling and Ready
// (Unknown: the outcome is not known yet) and what is applied so far into
// status.inventory — the inventory before the sync and every object this
// sync applied, a superset of both, so a sync stopped half-way prunes
// nothing it should not — and writes the status (only what changed), or
// holds the write (statusWriter.hold).
func (s *syncRun) publishProgress(ctx context.Context, hold bool) error {
	msg := s.progressMessage()
	conditions.MarkReconciling(s.out, meta.ProgressingReason, "%s", msg)
	conditions.MarkUnknown(s.out, meta.ReadyCondition, meta.ProgressingReason, "%s", msg)
	if applied := s.tally.appliedOf(s.inventoryObjects()); len(applied) > 0 {
		s.st.Inventory = mergeInventories(s.prev.Inventory, applied)
	}
	s.prog.written, s.prog.shown = time.Now(), msg
	if hold {
		return s.status.hold(ctx, s.st)
	}
	return s.status.write(ctx, s.st)
}

// healthProgress is the WaitHealthy callback of a wave or of the final
// health check: what it waits for goes into the progress, written when it
// changed and at most every progressEvery.
func (s *syncRun) healthProgress(ctx context.Context) func([]engine.HealthReport) {
	return func(pending []engine.HealthReport) {
		s.prog.waiting = pending
		if time.Since(s.prog.written) < progressEvery || s.progressMessage() == s.prog.shown {
			return
		}
		if err := s.publishProgress(ctx, false); err != nil {
			// The next round writes again; the wait itself goes on.
			ctrl.LoggerFrom(ctx).Error(err, "writing the sync's progress")
		}
	}
}
