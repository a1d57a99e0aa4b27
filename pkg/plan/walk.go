package plan

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/argocd"
)

// Step is one wave of one phase: the unit a sync runs, records progress
// for, and resumes from.
type Step struct {
	Phase PhaseName
	Wave  Wave
}

// Steps lists the waves of the phases in the order a sync runs them
// (SyncFail left out: it runs only after a failure).
func (p *Plan) Steps() []Step {
	var out []Step
	for _, ph := range p.Phases {
		for _, w := range ph.Waves {
			out = append(out, Step{Phase: ph.Name, Wave: w})
		}
	}
	return out
}

// WithoutHooks returns the plan of a resync of a sync that already
// succeeded: the Sync phase's regular objects only, in their waves; no
// hooks, no other phase, no SyncFail.
func (p *Plan) WithoutHooks() *Plan {
	out := &Plan{SyncFail: Phase{Name: SyncFail}, Inventory: p.Inventory}
	for _, ph := range p.Phases {
		if ph.Name != Sync {
			continue
		}
		kept := Phase{Name: ph.Name}
		for _, w := range ph.Waves {
			var objs []Object
			for _, o := range w.Objects {
				if o.Hook == nil {
					objs = append(objs, o)
				}
			}
			if len(objs) > 0 {
				kept.Waves = append(kept.Waves, Wave{Number: w.Number, Objects: objs})
			}
		}
		out.Phases = append(out.Phases, kept)
	}
	return out
}

// Regular returns the wave's regular (non-hook) objects, in apply order.
func (w Wave) Regular() []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range w.Objects {
		if o.Hook == nil {
			out = append(out, o.Unstructured)
		}
	}
	return out
}

// Hooks returns the wave's hook tasks, in order.
func (w Wave) Hooks() []Object {
	var out []Object
	for _, o := range w.Objects {
		if o.Hook != nil {
			out = append(out, o)
		}
	}
	return out
}

// KindGroups splits objects in kind order (a wave's Regular objects) into
// runs of one group and kind: sync-controller applies a run concurrently,
// and the runs one after another, so that Namespaces and CRDs exist before
// what needs them.
func KindGroups(objs []*unstructured.Unstructured) [][]*unstructured.Unstructured {
	var groups [][]*unstructured.Unstructured
	for i, o := range objs {
		if i == 0 || o.GroupVersionKind().GroupKind() != objs[i-1].GroupVersionKind().GroupKind() {
			groups = append(groups, nil)
		}
		groups[len(groups)-1] = append(groups[len(groups)-1], o)
	}
	return groups
}

// IsHook reports whether obj is a hook (annotated plumb.dev/hook,
// argocd.argoproj.io/hook or helm.sh/hook, whether or not it runs in the sync at hand): never in the
// inventory, never pruned.
func IsHook(obj *unstructured.Unstructured) bool {
	ann := obj.GetAnnotations()
	_, plumbHook := ann[kustomizev1.HookAnnotation]
	_, argoHook := ann[argocd.HookAnnotation]
	_, helmHook := ann[helmv2.HookAnnotation]
	return plumbHook || argoHook || helmHook
}
