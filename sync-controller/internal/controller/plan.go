package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/events"
	"plumb.dev/pkg/inventory"
	"plumb.dev/pkg/plan"
	"plumb.dev/pkg/reconcile"
	"plumb.dev/sync-controller/internal/engine"
)

// syncID names one sync operation: the rendered artifact and generation it
// applies, and when it started. Hooks carry it, so a restarted controller
// recognizes the hooks it already started for this sync; a retry of a
// failed sync is an operation of its own, which runs its hooks afresh (a
// named hook left by the failed one is deleted first, one with only a
// generateName gets a new name), as Argo CD does.
func (s *syncRun) syncID() string {
	return plan.SyncID(s.digest, s.obj.GetGeneration(), s.operationStart().Time)
}

// operationStart is when the sync operation this run belongs to started:
// the one status records, when this run resumes it after a restart,
// re-checks it (it succeeded) or waits to retry it; now, to the second
// (status keeps seconds), when this run starts a new one.
func (s *syncRun) operationStart() metav1.Time {
	if s.op.started != nil {
		return *s.op.started
	}
	start := metav1.NewTime(time.Now().Truncate(time.Second))
	if prev := s.prev.Sync; prev != nil && prev.StartedAt != nil && prev.Digest == s.digest && prev.Generation == s.obj.GetGeneration() {
		if !s.isNewSync() || s.resumePoint(true) != nil || s.retries().holds() {
			start = *prev.StartedAt
		}
	}
	s.op.started = &start
	return start
}

// isNewSync reports whether this run starts, retries or resumes a sync
// operation with hooks, rather than re-checking a sync that already
// succeeded.
func (s *syncRun) isNewSync() bool {
	if s.rel != nil && s.rel.action == correctRelease {
		return false // the deployed release re-checked, whatever the generation
	}
	prev := s.prev.Sync
	if s.window != nil && s.window.artifact != nil {
		// A sync window holds the newest render and the run applies the
		// one synced last again: if that sync succeeded, its hooks ran,
		// and a spec change during the window (a new generation) does not
		// make re-applying it a sync that runs them again.
		return prev == nil || prev.Digest != s.digest || prev.Phase != kustomizev1.PhaseSucceeded
	}
	return prev == nil || prev.Digest != s.digest || prev.Generation != s.obj.GetGeneration() || prev.Phase != kustomizev1.PhaseSucceeded
}

// applyPlan runs the sync plan: PreSync, Sync and PostSync phases, each wave
// applied and, when anything follows it, waited on until healthy; SyncFail
// hooks when a task fails. A resync of a sync that already succeeded runs
// only the Sync phase's objects, without hooks. Sets Ready=False reason
// ApplyFailed or SyncFailed, and the drift report.
func (s *syncRun) applyPlan(ctx context.Context) error {
	if err := s.retryGate(); err != nil {
		return err
	}
	if s.spec.DriftPolicy != kustomizev1.DriftPolicyReport {
		// Drift only reported is never corrected, so never fought.
		s.fights = s.r.fights.Start(s.r.Fight, s.key, s.obj.GetGeneration(), s.spec.Interval)
	}
	p := s.plan
	newSync := s.isNewSync()
	if !newSync && s.spec.DriftDisabled {
		// Drift is neither corrected nor reported: what succeeded is
		// applied again only when the render or the spec changes.
		s.st.Inventory = inventory.New(s.inventoryObjects())
		return nil
	}
	if !newSync || s.spec.Switches.DisableHooks {
		p = p.WithoutHooks()
	}
	s.op.made = newSync
	if s.mayLast(p) {
		if err := s.status.mayLast(ctx); err != nil {
			return err
		}
	}
	resume := s.resumePoint(newSync)
	if newSync {
		start := s.operationStart()
		s.st.Sync = &kustomizev1.SyncProgress{Revision: s.revision, Digest: s.digest, Generation: s.obj.GetGeneration(), StartedAt: &start,
			Warnings: syncWarnings(s.objs)}
	}

	// Explained here already, so that status.sync, which a retry shows
	// until it is due, says it too.
	err := s.r.targets.ExplainForbidden(ctx, s.target, s.runPhases(ctx, p, resume, newSync))
	s.recordApply(ctx)
	if err != nil {
		if newSync {
			s.runSyncFail(ctx, p)
			now := metav1.Now()
			s.st.Sync.Phase = kustomizev1.PhaseFailed
			s.st.Sync.Message = err.Error()
			s.st.Sync.FinishedAt = &now
		}
		// Keep every object we know of in the inventory, old and new, so
		// that a later successful sync can prune what it must.
		s.st.Inventory = mergeInventories(s.prev.Inventory, s.tally.appliedOf(s.inventoryObjects()))
		return err
	}
	if newSync {
		now := metav1.Now()
		s.st.Sync.Phase = kustomizev1.PhaseSucceeded
		s.st.Sync.Message = ""
		s.st.Sync.FinishedAt = &now
	}
	s.st.Inventory = inventory.New(s.inventoryObjects())
	return nil
}

// lastingObjects is the most objects (applied and pruned) a run of one
// wave with nothing to wait for may have and still be held quick
// (mayLast): on a quiet machine an object's apply costs the API server a
// few milliseconds (docs/bench/fleet.md, the bare loop), so such a run's
// own work is a fraction of progressEvery, and a run of them that lasts a
// second lasts it in the API server's queue.
const lastingObjects = 100

// mayLast reports whether a run of p can last by its own work — hooks to
// wait on, waves that wait for each other, a health wait, CRDs to be
// established, or more than lastingObjects objects to apply and prune —
// so that its progress is worth a status write once it has lasted
// progressEvery (statusWriter.hold). Any other run writes only its
// outcome: however long the API server makes it last, its progress would
// be one more of the costliest requests exactly when the server is slow,
// for a state that the outcome follows at once.
func (s *syncRun) mayLast(p *plan.Plan) bool {
	steps := p.Steps()
	if len(steps) > 1 || len(p.Hooks()) > 0 || s.readsHealth() {
		return true
	}
	n := 0
	if inv := s.prev.Inventory; inv != nil {
		n = len(inv.Entries)
	}
	for _, st := range steps {
		for _, o := range st.Wave.Regular() {
			if o.GetKind() == "CustomResourceDefinition" {
				return true
			}
			n++
		}
	}
	return n > lastingObjects
}

// resumePoint returns where an interrupted sync of the same artifact and
// generation stopped, as the status in the cluster records it.
func (s *syncRun) resumePoint(newSync bool) *kustomizev1.SyncProgress {
	prev := s.prev.Sync
	if !newSync || prev == nil || prev.Digest != s.digest || prev.Generation != s.obj.GetGeneration() {
		return nil
	}
	switch prev.Phase {
	case kustomizev1.PhasePreSync, kustomizev1.PhaseSync, kustomizev1.PhasePostSync:
		return prev
	}
	return nil
}

func (s *syncRun) runPhases(ctx context.Context, p *plan.Plan, resume *kustomizev1.SyncProgress, newSync bool) error {
	ctx, cancel := context.WithTimeout(ctx, s.spec.Timeout)
	defer cancel()
	started := resume == nil
	steps := p.Steps()
	first := true
	for i, st := range steps {
		phase := string(st.Phase)
		if !started {
			if phase != resume.Phase || st.Wave.Number < resume.Wave {
				continue
			}
			started = true
		}
		if newSync {
			hold := first && len(st.Wave.Hooks()) == 0
			if err := s.writeProgress(ctx, phase, st.Wave.Number, i+1, len(steps), hold); err != nil {
				return err
			}
		}
		first = false
		// The last wave without hooks is waited on only by spec.wait
		// and spec.healthChecks (checkHealth): without them nothing
		// judges its objects' health, and their writes may be answered
		// with metadata only.
		waited := i < len(steps)-1 || len(st.Wave.Hooks()) > 0 || s.readsHealth()
		if err := s.runWave(ctx, st.Wave, waited); err != nil {
			return reconcile.Failed(kustomizev1.SyncFailedReason, fmt.Errorf("%s phase, wave %d: %w", phase, st.Wave.Number, err))
		}
		// The next wave starts only when this one is healthy; hooks are
		// always waited on, since they must complete.
		if i < len(steps)-1 || len(st.Wave.Hooks()) > 0 {
			if err := s.waitWave(ctx, st.Wave); err != nil {
				return reconcile.Failed(kustomizev1.SyncFailedReason, fmt.Errorf("%s phase, wave %d: %w", phase, st.Wave.Number, err))
			}
		}
	}
	return nil
}

// runWave applies the wave's objects kind group by kind group, so that
// Namespaces and CRDs exist before what needs them, then starts the wave's
// hooks, which may live in a namespace the wave creates (pkg/plan hoists a
// Namespace into the wave of the first hook that needs it). waited says
// that the run will wait for the health of the wave's objects; without,
// the writes are answered with the objects' metadata only
// (engine.Options.NotWaitedOn), but a group of CRDs, which the next group
// waits to see established (waitEstablished).
func (s *syncRun) runWave(ctx context.Context, w plan.Wave, waited bool) error {
	for _, group := range plan.KindGroups(w.Regular()) {
		if err := s.refuseForeign(ctx, group); err != nil {
			return err
		}
		results, err := s.target.Engine.ApplySet(ctx, group, s.hashes, engine.Options{
			Owner:       s.owner,
			Ignore:      s.ignorer,
			ReportOnly:  s.spec.DriftPolicy == kustomizev1.DriftPolicyReport,
			Force:       s.spec.Force,
			Guard:       s.fights.Guard(),
			NotWaitedOn: !waited && !definesKinds(group),
		})
		for _, res := range results {
			// A contested object's corrections are reported once per
			// fight (reportFights), not as ordinary drift.
			s.tally.add(res, s.fights.Record(res, s.hashes[res.ID]))
		}
		if err != nil {
			return err
		}
		if err := s.waitEstablished(ctx, group); err != nil {
			return err
		}
	}
	for _, h := range w.Hooks() {
		if err := s.startHook(ctx, h); err != nil {
			return err
		}
	}
	return nil
}

// waitWave waits until the wave's objects and hooks are healthy.
func (s *syncRun) waitWave(ctx context.Context, w plan.Wave) error {
	objs, hooks := s.waitedOn(w.Regular()), w.Hooks()
	for _, h := range hooks {
		objs = append(objs, h.Unstructured)
	}
	if len(objs) == 0 {
		return nil
	}
	if _, err := s.target.Engine.WaitHealthy(ctx, objs, s.tally.applied, s.healthProgress(ctx)); err != nil {
		if herr := s.finishHooks(ctx, hooks, false); herr != nil {
			return errors.Join(err, herr)
		}
		return err
	}
	return s.finishHooks(ctx, hooks, true)
}

// readsHealth reports whether the run judges the health of its objects
// after the last wave (checkHealth): spec.wait, or spec.healthChecks,
// which may name them.
func (s *syncRun) readsHealth() bool {
	return s.spec.Wait || len(s.spec.HealthChecks) > 0
}

// definesKinds reports whether group, a kind group, is of CRDs.
func definesKinds(group []*unstructured.Unstructured) bool {
	return len(group) > 0 && group[0].GetKind() == "CustomResourceDefinition"
}

// waitEstablished waits for the CRDs of a group to be served before the
// custom resources that follow are applied.
func (s *syncRun) waitEstablished(ctx context.Context, group []*unstructured.Unstructured) error {
	if !definesKinds(group) {
		return nil
	}
	if _, err := s.target.Engine.WaitHealthy(ctx, group, s.tally.applied, nil); err != nil {
		return fmt.Errorf("waiting for CRDs to be established: %w", err)
	}
	// Established is the API server's word; the client's discovery learns
	// of the new kinds a moment later.
	return s.target.Engine.WaitServed(ctx, group)
}

// recordApply counts what the run did and reports drift.
func (s *syncRun) recordApply(ctx context.Context) {
	for action, n := range s.tally.counts {
		s.r.Metrics.handled(string(action), n)
	}
	if s.tally.written > 0 {
		msg, metadata := s.tally.appliedEvent(s.revision)
		s.r.Events.Record(s.obj, events.SeverityInfo, kustomizev1.AppliedReason, msg,
			events.WithRevision(s.revision), events.WithMetadata(metadata))
	}
	s.reportDrift(ctx)
	s.reportFights(ctx)
}

// mergeInventories returns the union of an inventory and a set of objects.
func mergeInventories(old *kustomizev1.Inventory, objs []*unstructured.Unstructured) *kustomizev1.Inventory {
	all := append(inventory.Objects(old), objs...)
	seen := map[kustomizev1.InventoryEntry]bool{}
	var unique []*unstructured.Unstructured
	for _, o := range all {
		e := inventory.EntryOf(o)
		if !seen[e] {
			seen[e] = true
			unique = append(unique, o)
		}
	}
	return inventory.New(unique)
}
