package controller

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/plan"
)

// syncPlan is pkg/plan's plan in the shape the sync steps walk.
type syncPlan struct {
	phases   []planPhase
	syncFail []planWave
}

type planPhase struct {
	name  string
	waves []planWave
}

type planWave struct {
	number  int
	objects []*unstructured.Unstructured
	hooks   []hookTask
}

type hookTask struct {
	obj             *unstructured.Unstructured
	phase           string
	deleteOnSuccess bool
	deleteOnFailure bool
}

type planStep struct {
	phase string
	wave  planWave
}

// buildPlan orders the objects into phases and waves; hooks are named for
// the sync id.
func buildPlan(objs []*unstructured.Unstructured, syncID string) (*syncPlan, error) {
	p, err := plan.Build(objs, plan.Options{SyncID: syncID})
	if err != nil {
		return nil, err
	}
	out := &syncPlan{}
	for _, ph := range p.Phases {
		out.phases = append(out.phases, planPhase{name: string(ph.Name), waves: convertWaves(ph.Name, ph.Waves)})
	}
	out.syncFail = convertWaves(plan.SyncFail, p.SyncFail.Waves)
	return out, nil
}

func convertWaves(phase plan.PhaseName, waves []plan.Wave) []planWave {
	out := make([]planWave, 0, len(waves))
	for _, w := range waves {
		pw := planWave{number: w.Number}
		for _, o := range w.Objects {
			if o.Hook == nil {
				pw.objects = append(pw.objects, o.Unstructured)
				continue
			}
			pw.hooks = append(pw.hooks, hookTask{
				obj:             o.Unstructured,
				phase:           string(phase),
				deleteOnSuccess: o.Hook.HasPolicy(plan.HookSucceeded),
				deleteOnFailure: o.Hook.HasPolicy(plan.HookFailed),
			})
		}
		out = append(out, pw)
	}
	return out
}

// steps lists the waves of the phases in the order they run.
func (p *syncPlan) steps() []planStep {
	var out []planStep
	for _, ph := range p.phases {
		for _, w := range ph.waves {
			out = append(out, planStep{phase: ph.name, wave: w})
		}
	}
	return out
}

// withoutHooks keeps the Sync phase's regular objects: what a resync of an
// already successful sync re-checks.
func (p *syncPlan) withoutHooks() *syncPlan {
	out := &syncPlan{}
	for _, ph := range p.phases {
		if ph.name != string(plan.Sync) {
			continue
		}
		var waves []planWave
		for _, w := range ph.waves {
			if len(w.objects) > 0 {
				waves = append(waves, planWave{number: w.number, objects: w.objects})
			}
		}
		out.phases = append(out.phases, planPhase{name: ph.name, waves: waves})
	}
	return out
}

// kindGroups splits a wave's objects, already in kind order, into runs of
// one kind: each run is applied concurrently, runs one after another.
func kindGroups(objs []*unstructured.Unstructured) [][]*unstructured.Unstructured {
	var groups [][]*unstructured.Unstructured
	for i, o := range objs {
		if i == 0 || o.GroupVersionKind().GroupKind() != objs[i-1].GroupVersionKind().GroupKind() {
			groups = append(groups, nil)
		}
		groups[len(groups)-1] = append(groups[len(groups)-1], o)
	}
	return groups
}

// pruneOrder orders objects to delete: reverse wave, reverse kind order.
func pruneOrder(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	return plan.Flatten(plan.PruneOrder(objs))
}

// isHook reports whether obj is a hook (never in the inventory).
func isHook(obj *unstructured.Unstructured) bool {
	_, ok := obj.GetAnnotations()[kustomizev1.HookAnnotation]
	return ok
}
