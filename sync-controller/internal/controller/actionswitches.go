package controller

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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
	// CleanupOnFail deletes what a failed upgrade created (cleanupOnFail.go).
	CleanupOnFail bool
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
