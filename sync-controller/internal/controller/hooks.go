package controller

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/log"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/events"
	"plumb.dev/pkg/object"
	"plumb.dev/pkg/plan"
)

// startHook creates a hook for this sync (startHookOf).
func (s *syncRun) startHook(ctx context.Context, h plan.Object) error {
	return s.startHookOf(ctx, h, s.syncID())
}

// startHookOf creates a hook for the operation id (a sync, or a deletion),
// labelled with it. A hook object of the same name left by an earlier
// operation is deleted first (the BeforeHookCreation policy, and the only
// way to run a Job again); one already created by this operation — the
// controller restarted while it ran — is kept and waited on.
func (s *syncRun) startHookOf(ctx context.Context, h plan.Object, id string) error {
	live, err := s.target.Engine.Get(ctx, h.Unstructured)
	if err != nil {
		return err
	}
	if live != nil {
		if live.GetLabels()[plan.HookSyncLabel] == id {
			s.tally.applied[object.IDOf(h.Unstructured)] = live
			return nil
		}
		if err := s.target.Engine.Delete(ctx, live, true); err != nil {
			return err
		}
	}
	obj := h.Unstructured.DeepCopy()
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	nameKey, nsKey := s.owner.LabelKeys()
	labels[nameKey] = s.owner.Name
	labels[nsKey] = s.owner.Namespace
	labels[plan.HookSyncLabel] = id
	obj.SetLabels(labels)
	created, err := s.target.Engine.CreateHook(ctx, obj)
	if err != nil {
		return fmt.Errorf("hook %s: %w", object.IDOf(h.Unstructured), err)
	}
	s.tally.applied[object.IDOf(h.Unstructured)] = created
	s.r.Events.Record(s.obj, events.SeverityInfo, kustomizev1.HookStartedReason,
		fmt.Sprintf("%s hook %s started", h.Phase, object.IDOf(h.Unstructured)), events.WithRevision(s.revision))
	return nil
}

// finishHooks deletes the hooks whose delete policy asks for it after the
// given outcome.
func (s *syncRun) finishHooks(ctx context.Context, hooks []plan.Object, succeeded bool) error {
	for _, h := range hooks {
		if (succeeded && h.Hook.HasPolicy(plan.HookSucceeded)) || (!succeeded && h.Hook.HasPolicy(plan.HookFailed)) {
			if err := s.target.Engine.Delete(ctx, h.Unstructured, false); err != nil {
				return err
			}
		}
	}
	return nil
}

// runSyncFail runs the SyncFail hooks after a failed sync and waits for
// them, bounded by the Kustomization's timeout. Their own failure is
// reported but changes nothing: the sync has failed already.
func (s *syncRun) runSyncFail(ctx context.Context, p *plan.Plan) {
	ctx, cancel := context.WithTimeout(ctx, s.spec.Timeout)
	defer cancel()
	for _, w := range p.SyncFail.Waves {
		if err := s.runWave(ctx, w, true); err != nil {
			s.hookFailed(ctx, w, err)
			return
		}
		if err := s.waitWave(ctx, w); err != nil {
			s.hookFailed(ctx, w, err)
			return
		}
	}
}

func (s *syncRun) hookFailed(ctx context.Context, w plan.Wave, err error) {
	log.FromContext(ctx).Info("SyncFail hook failed", "error", err.Error())
	msg, detail := eventOf(err)
	s.r.Events.Record(s.obj, events.SeverityError, kustomizev1.SyncFailedReason,
		"SyncFail hook failed: "+msg, events.WithRevision(s.revision), detail)
	_ = s.finishHooks(ctx, w.Hooks(), false)
}
