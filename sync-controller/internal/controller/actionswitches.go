package controller

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"plumb.dev/pkg/inventory"
	"plumb.dev/pkg/object"
	"plumb.dev/sync-controller/internal/engine"
)

// actionSwitches are the switches of a HelmRelease's install or upgrade
// (spec.install, spec.upgrade: Flux's names) that change how a sync runs;
// the action's timeout and upgrade.force go into syncSpec's Timeout and
// Force. Zero for a Kustomization, and for a HelmRelease that sets none.
type actionSwitches struct {
	// DisableHooks: the sync runs none of the render's hooks (Helm's
	// --no-hooks); chart tests are not hooks of a sync (charttests.go).
	DisableHooks bool
	// DisableWait: no wait for regular objects, neither between waves nor
	// at the end; hooks are still waited on, since they must complete.
	DisableWait bool
	// DisableWaitForJobs: Jobs (not hooks) are left out of every wait.
	DisableWaitForJobs bool
	// CreateNamespace adds the release namespace to the render, created
	// when missing and never pruned (withNamespace).
	CreateNamespace bool
	// CleanupOnFail deletes what a failed upgrade created (cleanuponfail.go).
	CleanupOnFail bool
	// DisableTakeOwnership refuses to apply over an existing object that
	// is not the release's (refuseForeign).
	DisableTakeOwnership bool
}

// applySwitches fills in the sync spec from the action a sync of this
// HelmRelease makes: install's switches while it installs
// (helmRelease.install), upgrade's after — Helm reads one action's flags
// at a time, and so does Flux.
func (h helmRelease) applySwitches(out *syncSpec) {
	installing := h.install()
	sw := h.GetActionSwitches(installing)
	out.Timeout = h.GetActionTimeout(installing)
	out.Wait = !sw.DisableWait
	out.Switches = actionSwitches{
		DisableHooks:       sw.DisableHooks,
		DisableWait:        sw.DisableWait,
		DisableWaitForJobs: sw.DisableWaitForJobs,

		DisableTakeOwnership: sw.DisableTakeOwnership,
	}
	// The namespace stays in the render after the install, so that no
	// upgrade sees it leave (it is never pruned anyway).
	if h.Spec.Install != nil {
		out.Switches.CreateNamespace = h.Spec.Install.CreateNamespace
	}
	if !installing && h.Spec.Upgrade != nil {
		out.Force = h.Spec.Upgrade.Force
		out.Switches.CleanupOnFail = h.Spec.Upgrade.CleanupOnFail
	}
}

// waitedOn returns those of a wave's or a sync's regular objects that a
// health wait judges under the switches: none with disableWait, all but
// Jobs with disableWaitForJobs, else all of them.
func (s *syncRun) waitedOn(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	sw := s.spec.Switches
	switch {
	case sw.DisableWait:
		return nil
	case !sw.DisableWaitForJobs:
		return objs
	}
	out := make([]*unstructured.Unstructured, 0, len(objs))
	for _, o := range objs {
		if gvk := o.GroupVersionKind(); gvk.Group == "batch" && gvk.Kind == "Job" {
			continue
		}
		out = append(out, o)
	}
	return out
}

// refuseForeign, with disableTakeOwnership, fails before a group is
// applied when one of its objects exists and does not carry this
// release's ownership labels — another release's, or made by hand or by
// another tool — as Helm refuses to import an object whose ownership
// metadata is not the release's. Objects of the inventory are the
// release's already and are not read again; one applied only when
// missing (plumb.dev/ssa: IfNotPresent) is never taken over anyway.
func (s *syncRun) refuseForeign(ctx context.Context, group []*unstructured.Unstructured) error {
	if !s.spec.Switches.DisableTakeOwnership {
		return nil
	}
	known := map[object.ID]bool{}
	for _, o := range inventory.Objects(s.prev.Inventory) {
		known[object.IDOf(o)] = true
	}
	for _, o := range group {
		if known[object.IDOf(o)] || engine.IfNotPresent(o) {
			continue
		}
		live, err := s.target.Engine.Get(ctx, o)
		if err != nil {
			return err
		}
		if live != nil && !s.owner.Owns(live.GetLabels()) {
			return fmt.Errorf("%s exists and is not this release's, and disableTakeOwnership is set: not taking it over", object.IDOf(o))
		}
	}
	return nil
}
