package plan

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// BuildDelete plans the delete hooks of objs, the last rendered set of an
// object being deleted: Phases holds PreDelete and then PostDelete, each
// only when it has hooks, their hooks in waves and the kind order as Build
// orders a sync's. Regular objects are left out (they are pruned, in
// PruneOrder, between the two phases), and so are hooks of a sync phase
// only; Inventory and SyncFail are empty. Helm's pre-delete and
// post-delete hooks are PreDelete and PostDelete. opts.SyncID names the
// deletion: it seeds the names of generateName hooks, as a sync id does;
// opts.Install is not read. A bad annotation on a hook, or two delete
// hooks of one name in one phase, is an error naming the object; regular
// objects are not checked (they are not planned).
func BuildDelete(objs []*unstructured.Unstructured, opts Options) (*Plan, error) {
	entries, err := planEntries(objs, opts, helmDelete)
	if err != nil {
		return nil, err
	}
	p := &Plan{SyncFail: Phase{Name: SyncFail}}
	for _, name := range []PhaseName{PreDelete, PostDelete} {
		var in []Object
		for _, e := range entries {
			if e.Phase == name {
				in = append(in, e.Object)
			}
		}
		if len(in) > 0 {
			p.Phases = append(p.Phases, Phase{Name: name, Waves: groupWaves(in, false)})
		}
	}
	return p, nil
}

// Phase returns the plan's phase of that name, and whether it has one.
func (p *Plan) Phase(name PhaseName) (Phase, bool) {
	for _, ph := range p.Phases {
		if ph.Name == name {
			return ph, true
		}
	}
	return Phase{Name: name}, false
}
