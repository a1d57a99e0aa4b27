package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/fluxcd/pkg/runtime/conditions"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/diff"
	"plumb.dev/pkg/events"
	"plumb.dev/pkg/message"
	"plumb.dev/pkg/object"
	"plumb.dev/pkg/plan"
	"plumb.dev/pkg/reconcile"
	"plumb.dev/sync-controller/internal/engine"
)

// maxSyncOnly bounds the objects a selective sync may name: the annotation
// is a person's list, and each entry is looked up in the render.
const maxSyncOnly = 100

// manualSync is the gate of spec.syncPolicy Manual, between prepare and
// the prune guard. With Automatic it only clears what Manual reported.
// With Manual the run goes on to the apply only when a sync was asked for
// (a new plumb.dev/sync token, recorded in status.lastHandledSyncAt so it
// runs once), or to resume or retry a sync operation of this render that
// was asked for before. Otherwise, and after a selective sync
// (plumb.dev/sync-only: only the named objects applied, without hooks or
// prune), it compares the render with the cluster by a dry-run that
// writes nothing (holdForManualSync) and ends the run. Sets OutOfSync and
// status.outOfSync, and Drifted as driftPolicy Report does.
func (s *syncRun) manualSync(ctx context.Context) error {
	ms := s.outApp.manualSync()
	if !s.spec.Manual {
		conditions.Delete(s.out, kustomizev1.OutOfSyncCondition)
		ms.OutOfSync = nil
		return nil
	}
	if s.rel != nil && s.rel.action != attemptRelease && !s.rel.requested {
		// A HelmRelease's remediation of an attempt that was asked for.
		// (A person's rollback is a request of its own, below.)
		return nil
	}
	if synced := lastSynced(s.obj); s.hold != nil && (synced == nil || synced.Digest != s.digest) {
		// A rollback (hold.go) is a person's request of its own: its
		// render is applied once without plumb sync; afterwards drift
		// from it is reported as for any render of a Manual object.
		conditions.Delete(s.out, kustomizev1.OutOfSyncCondition)
		ms.OutOfSync = nil
		return nil
	}
	token := s.obj.GetAnnotations()[kustomizev1.SyncRequestAnnotation]
	if token != "" && token != s.app.manualSync().LastHandledSyncAt {
		ms.LastHandledSyncAt = token
		if only := s.obj.GetAnnotations()[kustomizev1.SyncOnlyAnnotation]; strings.TrimSpace(only) != "" {
			if err := s.syncSelected(ctx, only); err != nil {
				return err
			}
			return s.holdForManualSync(ctx)
		}
		conditions.Delete(s.out, kustomizev1.OutOfSyncCondition)
		ms.OutOfSync = nil
		return nil
	}
	if prev := s.prev.Sync; s.sameRender(prev) && prev.Phase != kustomizev1.PhaseSucceeded {
		// A sync that was asked for, interrupted or failed: resumed or
		// retried as any sync operation is.
		return nil
	}
	return s.holdForManualSync(ctx)
}

// sameRender reports whether a sync operation was of the run's render and
// generation.
func (s *syncRun) sameRender(op *kustomizev1.SyncProgress) bool {
	return op != nil && op.Digest == s.digest && op.Generation == s.obj.GetGeneration()
}

// holdForManualSync compares every object of the render with the cluster
// by a dry-run that writes nothing, reports the difference in OutOfSync and
// status.outOfSync (reason ManualSyncPending for a render not synced yet,
// DriftDetected for drift of the one synced) and drift as driftPolicy
// Report does, and ends the run: Ready keeps what was applied, its message
// saying what waits (outOfSyncNote).
func (s *syncRun) holdForManualSync(ctx context.Context) error {
	s.keepAttempted()
	// What a selective sync of this run just wrote exists, whether or not
	// the watch cache has seen it yet.
	written := s.tally.applied
	s.tally = newTally()
	s.spec.DriftPolicy = kustomizev1.DriftPolicyReport
	var create, change []string
	for _, group := range plan.KindGroups(s.inventoryObjects()) {
		results, err := s.target.Engine.ApplySet(ctx, group, s.hashes, engine.Options{
			Owner: s.owner, Ignore: s.ignorer, Preview: true,
		})
		if results == nil && err != nil {
			if !apimeta.IsNoMatchError(errors.Unwrap(err)) && !apimeta.IsNoMatchError(err) {
				return reconcile.Failed(kustomizev1.ApplyFailedReason, fmt.Errorf("comparing with the cluster: %w", err))
			}
			// A kind whose CRD the render brings: none exists yet.
			for _, o := range group {
				create = append(create, object.IDOf(o).String())
			}
			continue
		}
		if err != nil {
			return reconcile.Failed(kustomizev1.ApplyFailedReason, fmt.Errorf("comparing with the cluster: %w", err))
		}
		for _, res := range results {
			if _, ok := written[res.ID]; ok && res.Action == diff.Created {
				continue
			}
			s.tally.add(res, false)
			switch res.Action {
			case diff.Created:
				create = append(create, res.ID.String())
			case diff.Configured:
				change = append(change, res.ID.String())
			}
		}
	}
	var prune []string
	if s.spec.Prune {
		for _, o := range s.removedObjects() {
			prune = append(prune, object.IDOf(o).String())
		}
	}
	s.reportDrift(ctx)

	ms := s.outApp.manualSync()
	if len(create)+len(change)+len(prune) == 0 {
		conditions.Delete(s.out, kustomizev1.OutOfSyncCondition)
		ms.OutOfSync = nil
		return reconcile.ErrStop
	}
	for _, l := range [][]string{create, change, prune} {
		slices.Sort(l)
	}
	out := &kustomizev1.OutOfSyncStatus{Revision: s.revision, Digest: s.digest,
		Creates: len(create), Changes: len(change), Prunes: len(prune)}
	out.Create, _ = diff.Truncate(create, kustomizev1.MaxOutOfSyncObjects)
	out.Change, _ = diff.Truncate(change, kustomizev1.MaxOutOfSyncObjects)
	out.Prune, _ = diff.Truncate(prune, kustomizev1.MaxOutOfSyncObjects)
	ms.OutOfSync = out
	reason := kustomizev1.ManualSyncPendingReason
	if s.sameRender(s.prev.Sync) {
		reason = kustomizev1.DriftDetectedReason
	}
	conditions.MarkTrue(s.out, kustomizev1.OutOfSyncCondition, reason, "%s", outOfSyncMessage(out))
	return reconcile.ErrStop
}

// keepAttempted keeps the last attempt's fields: loadManifests set them for
// a render that is not attempted after all.
func (s *syncRun) keepAttempted() {
	s.st.LastAttemptedRevision = s.prev.LastAttemptedRevision
	if hr, ok := s.out.(*helmv2.HelmRelease); ok {
		was := s.obj.(*helmv2.HelmRelease).Status
		hr.Status.LastAttemptedConfigDigest = was.LastAttemptedConfigDigest
		hr.Status.LastAttemptedRevisionDigest = was.LastAttemptedRevisionDigest
	}
}

// outOfSyncMessage is OutOfSync's message: what a sync would do, each list
// cut to a few names.
func outOfSyncMessage(o *kustomizev1.OutOfSyncStatus) string {
	part := func(verb string, n int, names []string) string {
		if n == 0 {
			return fmt.Sprintf("0 to %s", verb)
		}
		shown, _ := diff.Truncate(names, 5)
		return fmt.Sprintf("%d to %s (%s)", n, verb, strings.Join(shown, ", "))
	}
	return fmt.Sprintf("revision %s waits for a manual sync: %s, %s, %s", o.Revision,
		part("create", o.Creates, o.Create), part("change", o.Changes, o.Change), part("prune", o.Prunes, o.Prune))
}

// appliedMessage is Ready's message after a run that succeeded: the
// revision applied, and what waits for a manual sync.
func appliedMessage(revision string, st kustomizev1.ManualSyncStatus) string {
	if revision == "" && st.OutOfSync != nil {
		return "Nothing applied yet" + outOfSyncNote(st)
	}
	return "Applied revision: " + revision + outOfSyncNote(st)
}

// outOfSyncNote ends Ready's message while a render waits for a manual sync.
func outOfSyncNote(st kustomizev1.ManualSyncStatus) string {
	o := st.OutOfSync
	if o == nil {
		return ""
	}
	return fmt.Sprintf("; revision %s waits for a manual sync (%d to create, %d to change, %d to prune)",
		o.Revision, o.Creates, o.Changes, o.Prunes)
}

// syncSelected applies the objects of the render that only names
// (plumb.dev/sync-only: Kind/namespace/name, or Kind/name for a
// cluster-scoped object), kind group by kind group, without hooks, waves'
// health waits or prune, and adds them to the inventory. Sets Ready=False
// reason SyncFailed when only names an object the render does not have
// (nothing is applied then), ApplyFailed when an apply fails; records a
// SelectiveSync event.
func (s *syncRun) syncSelected(ctx context.Context, only string) error {
	want := map[string]bool{}
	for _, ref := range strings.Split(only, ",") {
		if ref = strings.TrimSpace(ref); ref != "" {
			want[ref] = false
		}
	}
	if len(want) > maxSyncOnly {
		return reconcile.Failed(kustomizev1.SyncFailedReason,
			fmt.Errorf("%s names %d objects, more than %d", kustomizev1.SyncOnlyAnnotation, len(want), maxSyncOnly))
	}
	var selected []*unstructured.Unstructured
	for _, o := range s.inventoryObjects() {
		id := object.IDOf(o).String()
		if _, ok := want[id]; ok {
			want[id] = true
			selected = append(selected, o)
		}
	}
	var missing []string
	for ref, found := range want {
		if !found {
			missing = append(missing, ref)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		shown, _ := diff.Truncate(missing, 10)
		return reconcile.Failed(kustomizev1.SyncFailedReason, fmt.Errorf("%s names objects that revision %s does not have: %s",
			kustomizev1.SyncOnlyAnnotation, s.revision, strings.Join(shown, ", ")))
	}
	for _, group := range plan.KindGroups(selected) {
		results, err := s.target.Engine.ApplySet(ctx, group, s.hashes, engine.Options{
			Owner: s.owner, Ignore: s.ignorer, Force: s.spec.Force,
		})
		for _, res := range results {
			s.tally.add(res, false)
		}
		if err == nil {
			err = s.waitEstablished(ctx, group)
		}
		if err != nil {
			s.st.Inventory = mergeInventories(s.prev.Inventory, s.tally.appliedOf(selected))
			return reconcile.Failed(kustomizev1.ApplyFailedReason, fmt.Errorf("selective sync: %w", err))
		}
	}
	s.st.Inventory = mergeInventories(s.prev.Inventory, selected)
	names := make([]string, len(selected))
	for i, o := range selected {
		names[i] = object.IDOf(o).String()
	}
	msg, metadata := s.tally.appliedEvent(s.revision)
	s.r.Events.Record(s.obj, events.SeverityInfo, kustomizev1.SelectiveSyncReason,
		fmt.Sprintf("selective sync of %s: %s", strings.Join(message.Names(names, 10), ", "), msg),
		events.WithRevision(s.revision), events.WithMetadata(metadata))
	return nil
}

// syncRequested passes updates that change the sync request annotations,
// so a manual sync runs at once.
type syncRequested struct{ predicate.Funcs }

func (syncRequested) Update(e event.UpdateEvent) bool {
	if e.ObjectOld == nil || e.ObjectNew == nil {
		return false
	}
	o, n := e.ObjectOld.GetAnnotations(), e.ObjectNew.GetAnnotations()
	return o[kustomizev1.SyncRequestAnnotation] != n[kustomizev1.SyncRequestAnnotation] ||
		o[kustomizev1.SyncOnlyAnnotation] != n[kustomizev1.SyncOnlyAnnotation]
}
