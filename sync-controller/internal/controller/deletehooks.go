package controller

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	"plumb.dev/pkg/events"
	"plumb.dev/pkg/health"
	"plumb.dev/pkg/inventory"
	"plumb.dev/pkg/manage"
	"plumb.dev/pkg/message"
	"plumb.dev/pkg/object"
	"plumb.dev/pkg/plan"
	"plumb.dev/sync-controller/internal/engine"
)

// defaultDeleteHookPoll is how often a running delete hook, or a pruned
// object still going, is looked at again (Syncer.DeleteHookPoll).
const defaultDeleteHookPoll = 2 * time.Second

// deletionPending ends a reconcile of a deleted object whose deletion is
// not over, without an error: it is looked at again after `after`, or,
// when after is 0 (a failed hook holds it), when the object changes (the
// force annotation, forceDeleteRequested).
type deletionPending struct {
	after time.Duration
	why   string
}

func (e *deletionPending) Error() string { return "deletion pending: " + e.why }

// runDeletion is what a deleted object's finalizer waits for
// (docs/design/sync-engine.md, "Delete hooks"): when it deletes its
// objects (a Kustomization's spec.deletionPolicy: Delete,
// WaitForTermination, or MirrorPrune with spec.prune; not suspended; a
// HelmRelease always), its PreDelete hooks, the prune of its inventory,
// then, once the pruned objects are gone, its PostDelete hooks, the hooks
// taken from the last rendered artifact; with WaitForTermination, the
// pruned objects gone (awaitTermination). nil means the deletion is over
// and the finalizer may go; a *deletionPending that it is not. An object
// that orphans its objects (Orphan, or MirrorPrune without prune) runs no
// hook either, as a non-cascading deletion in Argo CD: a delete hook
// prepares for or cleans up after objects going away, and they stay.
// With plumb.dev/force-delete: enabled the hooks, and the wait for
// termination, are skipped and the inventory pruned. Everything acts as the object's ServiceAccount; when
// that no longer exists (its namespace is being deleted, typically)
// nothing can be done in its name, and the objects are left, with a
// warning event, as Flux does.
func (r *Syncer) runDeletion(ctx context.Context, app application) error {
	obj := app.object()
	spec, st := app.spec(), app.syncStatus()
	if !spec.DeleteOnDeletion || spec.Suspend || st.Inventory == nil {
		return nil
	}
	sa, gone, err := r.targets.ServiceAccountGone(ctx, targetOf(app))
	if err != nil {
		return fmt.Errorf("reading ServiceAccount %s: %w", sa, err)
	}
	if gone {
		r.Events.Record(obj, events.SeverityError, kustomizev1.PruneFailedReason, fmt.Sprintf(
			"ServiceAccount %s no longer exists: no delete hook runs, and the %d object(s) of the inventory are left in place", sa, len(st.Inventory.Entries)))
		return nil
	}
	forced := obj.GetAnnotations()[kustomizev1.ForceDeleteAnnotation] == kustomizev1.EnabledValue
	t, err := r.targets.Resolve(ctx, targetOf(app))
	if err != nil {
		if forced {
			// A cluster that cannot be reached (a remote kubeconfig gone
			// with its namespace, typically) must not hold the deletion
			// for good once someone forces it: its objects are left.
			r.Events.Record(obj, events.SeverityError, kustomizev1.PruneFailedReason, fmt.Sprintf(
				"%s: %s: nothing can be pruned (%v); the %d object(s) of the inventory are left in place",
				kustomizev1.ForceDeleteAnnotation, kustomizev1.EnabledValue, err, len(st.Inventory.Entries)))
			return nil
		}
		return err
	}
	d := &deletion{s: newSyncRun(r, obj, time.Now()), inv: st.Inventory}
	d.s.target = t
	if err := d.awaitConfirmation(ctx); err != nil {
		return err
	}
	if forced {
		if d.started() {
			r.Events.Record(obj, events.SeverityInfo, kustomizev1.DeleteHooksSkippedReason, fmt.Sprintf(
				"%s: %s: the delete hooks are skipped", kustomizev1.ForceDeleteAnnotation, kustomizev1.EnabledValue))
		}
		_, err := d.prune(ctx)
		return err
	}
	if !spec.DeleteHooksDisabled {
		p, err := d.plan(ctx)
		if err != nil {
			return d.fail(ctx, kustomizev1.PhasePreDelete, 0, err, spec.RetryInterval)
		}
		if len(p.Phases) > 0 {
			if err := d.run(ctx, p); err != nil {
				return err
			}
		}
	}
	// Pruned again after the hooks: a no-op for what is gone, and it
	// lists what is still there.
	remaining, err := d.prune(ctx)
	if err != nil || !spec.WaitForTermination {
		return err
	}
	return d.awaitTermination(ctx, remaining)
}

// awaitTermination holds a WaitForTermination deletion while objects it
// deleted are still there (a finalizer of theirs, a foreground deletion
// of their dependents), looking again every DeleteHookPoll, for at most
// spec.timeout from the deletion, as Flux waits at most spec.timeout.
// Then, as Flux, it stops waiting: an error event names what is left and
// the object is let go.
func (d *deletion) awaitTermination(ctx context.Context, remaining []object.ID) error {
	if len(remaining) == 0 {
		return nil
	}
	s := d.s
	names := make([]string, len(remaining))
	for i, id := range remaining {
		names[i] = id.String()
	}
	listed := strings.Join(message.Names(names, 5), ", ")
	deadline := d.deletedAt().Add(s.spec.Timeout)
	wait := time.Until(deadline)
	rule, timeout := s.spec.terminationWait()
	if wait <= 0 {
		s.r.Events.Record(s.obj, events.SeverityError, kustomizev1.TerminationTimeoutReason, fmt.Sprintf(
			"%s: %d deleted object(s) still there after %s (%s): %s; no longer waiting for them",
			rule, len(remaining), timeout, s.spec.Timeout, listed), events.WithRevision(s.revision))
		return nil
	}
	msg := fmt.Sprintf("%s: waiting for %d deleted object(s) to be gone: %s (at most until %s, %s after the deletion)",
		rule, len(remaining), listed, deadline.UTC().Format(time.RFC3339), timeout)
	if err := d.report(ctx, kustomizev1.PhasePostDelete, 0, metav1.ConditionUnknown, meta.ProgressingReason, msg); err != nil {
		return err
	}
	return &deletionPending{after: min(s.r.DeleteHookPoll, wait), why: msg}
}

// deletion is one reconcile of a deletion with delete hooks. It borrows a
// syncRun for what a sync and a deletion share: creating hooks, their
// delete policies, events and the status write.
type deletion struct {
	s   *syncRun
	inv *kustomizev1.Inventory
	// id names the deletion: it seeds generateName hooks' names and labels
	// every hook, so a restarted controller finds the hooks it created.
	id string
	// startedAt is when an uninstall remediation started (uninstall.go),
	// nil for the deletion of the object.
	startedAt *metav1.Time
}

// deletedAt is when the object was marked for deletion, or the uninstall
// remediation started: the start of the deletion, as status.sync.startedAt
// records it.
func (d *deletion) deletedAt() metav1.Time {
	if d.startedAt != nil {
		return *d.startedAt
	}
	return *d.s.obj.GetDeletionTimestamp()
}

// progress is status.sync when it records this deletion, else nil.
func (d *deletion) progress() *kustomizev1.SyncProgress {
	prev := d.s.prev.Sync
	if prev == nil || prev.StartedAt == nil || !prev.StartedAt.Time.Equal(d.deletedAt().Time) {
		return nil
	}
	switch prev.Phase {
	case kustomizev1.PhasePreDelete, kustomizev1.PhasePostDelete, kustomizev1.PhaseFailed:
		return prev
	}
	return nil
}

// started says whether this deletion got as far as its hooks.
func (d *deletion) started() bool { return d.progress() != nil }

// plan downloads the last rendered artifact (or takes it from memory),
// names and places its hooks (the engine's Prepare, for their namespaces)
// and plans the delete hooks. No artifact (nothing was ever rendered) is
// no hook.
func (d *deletion) plan(ctx context.Context) (*plan.Plan, error) {
	s := d.s
	artifact := s.app.rendered()
	if artifact == nil {
		return &plan.Plan{}, nil
	}
	s.revision, s.digest = artifact.Revision, artifact.Digest
	d.id = plan.SyncID(artifact.Digest, 0, d.deletedAt().Time)
	release, err := s.r.Artifacts.acquire(ctx, artifact.Size)
	if err != nil {
		return nil, err
	}
	defer release() // only the hooks are kept
	objs, err := s.r.decodedArtifact(ctx, s.key, artifact)
	if err != nil {
		return nil, fmt.Errorf("reading the delete hooks from the rendered artifact: %w", err)
	}
	p, err := plan.BuildDelete(objs, plan.Options{SyncID: d.id})
	if err != nil || len(p.Phases) == 0 {
		return p, err
	}
	var planned []*unstructured.Unstructured
	for _, h := range p.Hooks() {
		planned = append(planned, h.Unstructured)
	}
	if _, err := s.target.Engine.Prepare(planned, engine.Options{Owner: s.owner, DefaultNamespace: s.app.defaultNamespace()}); err != nil {
		return nil, err
	}
	return p, nil
}

// run takes the deletion one step further from where status.sync says it
// stands: each wave of PreDelete hooks started and waited on, the prune,
// each wave of PostDelete hooks once the pruned objects are gone. A wave
// still running, or objects still going, end the reconcile
// (deletionPending) instead of waiting in a worker.
func (d *deletion) run(ctx context.Context, p *plan.Plan) error {
	prev := d.progress()
	if prev != nil && prev.Phase == kustomizev1.PhaseFailed {
		return &deletionPending{why: prev.Message}
	}
	steps := p.Steps()
	start := 0
	if prev != nil {
		for start < len(steps) && (string(steps[start].Phase) != prev.Phase || steps[start].Wave.Number < prev.Wave) {
			start++
		}
	}
	poll := d.s.r.DeleteHookPoll
	for i := start; i < len(steps); i++ {
		step := steps[i]
		phase, wave := string(step.Phase), step.Wave.Number
		if step.Phase == plan.PostDelete {
			// Pruned again on every look: a no-op for what is gone, and it
			// counts what is still there.
			remaining, err := d.prune(ctx)
			if err != nil {
				return err
			}
			if len(remaining) > 0 {
				msg := fmt.Sprintf("waiting for %d pruned object(s) to be deleted before the PostDelete hooks", len(remaining))
				if err := d.report(ctx, phase, wave, metav1.ConditionUnknown, meta.ProgressingReason, msg); err != nil {
					return err
				}
				return &deletionPending{after: poll, why: msg}
			}
		}
		if !d.at(phase, wave) {
			// Recorded before the wave's hooks are created, so that a
			// restart resumes here and never runs an earlier wave again.
			if err := d.report(ctx, phase, wave, metav1.ConditionUnknown, meta.ProgressingReason,
				fmt.Sprintf("running %s hooks, wave %d", phase, wave)); err != nil {
				return err
			}
		}
		hooks := step.Wave.Hooks()
		for _, h := range hooks {
			if err := d.s.startHookOf(ctx, h, d.id); err != nil {
				return d.fail(ctx, phase, wave, err, d.s.spec.RetryInterval)
			}
		}
		pending, failed := d.waveHealth(hooks)
		if failed != nil {
			_ = d.s.finishHooks(ctx, hooks, false)
			return d.fail(ctx, phase, wave, failed, 0)
		}
		if len(pending) > 0 {
			msg := fmt.Sprintf("%s hooks, wave %d: waiting for %s", phase, wave, strings.Join(message.Names(pending, 5), ", "))
			if err := d.report(ctx, phase, wave, metav1.ConditionUnknown, meta.ProgressingReason, msg); err != nil {
				return err
			}
			return &deletionPending{after: poll, why: msg}
		}
		if err := d.s.finishHooks(ctx, hooks, true); err != nil {
			return err
		}
		lastPreDelete := step.Phase == plan.PreDelete && (i+1 == len(steps) || steps[i+1].Phase != plan.PreDelete)
		if lastPreDelete {
			if _, err := d.prune(ctx); err != nil {
				return err
			}
		}
	}
	return nil
}

// at says whether status.sync, as last read or written, records this
// deletion at the phase and wave.
func (d *deletion) at(phase string, wave int) bool {
	cur := d.s.st.Sync
	return cur != nil && cur.StartedAt != nil && cur.StartedAt.Time.Equal(d.deletedAt().Time) &&
		cur.Phase == phase && cur.Wave == wave
}

// waveHealth looks at the wave's hooks as startHookOf just read or created
// them: which are still running, and the first that failed (Degraded).
func (d *deletion) waveHealth(hooks []plan.Object) ([]string, error) {
	var pending []string
	for _, h := range hooks {
		id := object.IDOf(h.Unstructured)
		res := health.Evaluate(d.s.tally.applied[id])
		switch res.Status {
		case health.Healthy:
		case health.Degraded:
			return nil, fmt.Errorf("%s hook %s failed: %s", h.Phase, id, res.Message)
		default:
			pending = append(pending, id.String()+" ("+res.String()+")")
		}
	}
	return pending, nil
}

// prune deletes the inventory (pruneOnDeletion) and returns what of it is
// still there. A failure is recorded as a PruneFailed event and retried
// with the controller's backoff, as before delete hooks existed.
func (d *deletion) prune(ctx context.Context) ([]object.ID, error) {
	s := d.s
	remaining, err := s.r.pruneOnDeletion(ctx, s.target.Engine, s.app, d.inv, s.spec.DeletionPropagation)
	if err != nil {
		s.r.Events.Record(s.obj, events.SeverityError, kustomizev1.PruneFailedReason, "pruning on deletion failed: "+err.Error())
	}
	return remaining, err
}

// fail records a failed deletion step: Ready=False reason
// DeleteHookFailed, and an event the first time. retry 0 holds the
// deletion (a hook failed: it waits for the force annotation, as Argo CD
// waits for the hook to be fixed); otherwise the step is tried again after
// retry (the artifact could not be read, a hook could not be created).
func (d *deletion) fail(ctx context.Context, phase string, wave int, err error, retry time.Duration) error {
	s := d.s
	msg := fmt.Sprintf("%s; the deletion waits: fix the cause, or set the annotation %s: %s to skip the delete hooks",
		err.Error(), kustomizev1.ForceDeleteAnnotation, kustomizev1.EnabledValue)
	if d.startedAt != nil {
		// An uninstall remediation is tried again, from its first hook,
		// after the retry interval.
		msg, retry, phase = err.Error(), s.spec.RetryInterval, kustomizev1.PhaseFailed
	}
	if retry == 0 {
		phase = kustomizev1.PhaseFailed
	}
	if c := conditions.Get(s.obj, meta.ReadyCondition); c == nil || c.Reason != kustomizev1.DeleteHookFailedReason || c.Message != msg {
		s.r.Events.Record(s.obj, events.SeverityError, kustomizev1.DeleteHookFailedReason, msg, events.WithRevision(s.revision))
	}
	if werr := d.report(ctx, phase, wave, metav1.ConditionFalse, kustomizev1.DeleteHookFailedReason, msg); werr != nil {
		return werr
	}
	return &deletionPending{after: retry, why: msg}
}

// report writes where the deletion stands to status.sync (phase, wave,
// startedAt the deletion's start) and Ready.
func (d *deletion) report(ctx context.Context, phase string, wave int, status metav1.ConditionStatus, reason, msg string) error {
	s := d.s
	started := d.deletedAt()
	sp := &kustomizev1.SyncProgress{
		Revision: s.revision, Digest: s.digest, Generation: s.obj.GetGeneration(),
		StartedAt: &started, Phase: phase, Wave: wave, Message: msg,
	}
	if prev := d.progress(); prev != nil && prev.Phase == phase && prev.Wave == wave && prev.Message == msg {
		sp.FinishedAt = prev.FinishedAt
	} else if phase == kustomizev1.PhaseFailed {
		now := metav1.NewTime(time.Now().Truncate(time.Second))
		sp.FinishedAt = &now
	}
	s.st.Sync = sp
	conditions.Set(s.out, &metav1.Condition{
		Type: meta.ReadyCondition, Status: status, Reason: reason, Message: msg, ObservedGeneration: s.obj.GetGeneration(),
	})
	return s.status.write(ctx, s.st)
}

// awaitConfirmation holds a deletion, before any delete hook runs or
// anything is deleted, while objects of the inventory ask for a
// confirmation (plumb.dev/prune: confirm, Argo CD's Delete=confirm) and
// the deleted object has no plumb.dev/confirm-delete annotation with a
// time not before its deletion: Ready=False, reason
// DeletionConfirmationRequired, naming them, and an event the first time.
// The force annotation does not lift it: it skips broken hooks, and these
// objects asked for a person's word.
func (d *deletion) awaitConfirmation(ctx context.Context) error {
	s := d.s
	if deletionConfirmed(s.obj.GetAnnotations(), d.deletedAt()) {
		return nil
	}
	asking, err := s.askingConfirmation(ctx, inventory.Objects(d.inv), manage.OwnerDeleted)
	if err != nil || len(asking) == 0 {
		return err
	}
	msg := fmt.Sprintf("the deletion waits for a confirmation: %d object(s) ask for one: %s. Nothing was deleted; "+
		"to go ahead, set the annotation %s to the current time (plumb confirm-delete %s %s)",
		len(asking), strings.Join(message.Names(asking, 10), ", "), kustomizev1.ConfirmDeleteAnnotation,
		strings.ToLower(s.owner.Kind), s.obj.GetName())
	if c := conditions.Get(s.obj, meta.ReadyCondition); c == nil || c.Reason != kustomizev1.DeletionConfirmationRequiredReason || c.Message != msg {
		s.r.Events.Record(s.obj, events.SeverityInfo, kustomizev1.DeletionConfirmationRequiredReason, msg, events.WithRevision(s.revision))
	}
	if err := d.report(ctx, kustomizev1.PhasePreDelete, 0, metav1.ConditionFalse, kustomizev1.DeletionConfirmationRequiredReason, msg); err != nil {
		return err
	}
	return &deletionPending{why: msg}
}

// deletionConfirmed reports whether annotations hold a
// plumb.dev/confirm-delete time not before deletedAt (both to the second:
// a deletionTimestamp has no finer grain).
func deletionConfirmed(annotations map[string]string, deletedAt metav1.Time) bool {
	v, ok := annotations[kustomizev1.ConfirmDeleteAnnotation]
	if !ok {
		return false
	}
	at, err := time.Parse(time.RFC3339, v)
	return err == nil && !at.Before(deletedAt.Truncate(time.Second))
}

// forceDeleteRequested passes updates that set plumb.dev/force-delete:
// enabled, or change plumb.dev/confirm-delete, on an object being deleted:
// a failed delete hook, or a deletion waiting for its confirmation, holds
// it without a requeue, and the annotations change no generation.
type forceDeleteRequested struct{ predicate.Funcs }

func (forceDeleteRequested) Update(e event.UpdateEvent) bool {
	if e.ObjectNew == nil || e.ObjectOld == nil || e.ObjectNew.GetDeletionTimestamp() == nil {
		return false
	}
	forced := func(o map[string]string) bool {
		return o[kustomizev1.ForceDeleteAnnotation] == kustomizev1.EnabledValue
	}
	oldA, newA := e.ObjectOld.GetAnnotations(), e.ObjectNew.GetAnnotations()
	return forced(newA) && !forced(oldA) || oldA[kustomizev1.ConfirmDeleteAnnotation] != newA[kustomizev1.ConfirmDeleteAnnotation]
}

// Only updates matter to forceDeleteRequested.
func (forceDeleteRequested) Create(event.CreateEvent) bool   { return false }
func (forceDeleteRequested) Delete(event.DeleteEvent) bool   { return false }
func (forceDeleteRequested) Generic(event.GenericEvent) bool { return false }
