package plan

import (
	"sort"
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"plumb.dev/pkg/object"
)

// less is the order within a wave, the kind order of pkg/object. Hooks of
// one generateName differ in name, so the order is total for a valid plan.
func less(a, b *unstructured.Unstructured) bool {
	return object.Less(object.IDOf(a), object.IDOf(b))
}

// groupWaves sorts objects into waves: ascending wave numbers and the kind
// order, or, with reverse, descending wave numbers and the reverse order.
func groupWaves(objs []Object, reverse bool) []Wave {
	sort.SliceStable(objs, func(i, j int) bool {
		a, b := objs[i], objs[j]
		if a.Wave != b.Wave {
			return (a.Wave < b.Wave) != reverse
		}
		if reverse {
			return less(b.Unstructured, a.Unstructured)
		}
		return less(a.Unstructured, b.Unstructured)
	})
	var waves []Wave
	for _, o := range objs {
		if len(waves) == 0 || waves[len(waves)-1].Number != o.Wave {
			waves = append(waves, Wave{Number: o.Wave})
		}
		w := &waves[len(waves)-1]
		w.Objects = append(w.Objects, o)
	}
	return waves
}

// provides returns what a Namespace or CRD object lets other objects
// exist: "ns/<name>" or "gk/<group>/<kind>"; "" for other objects.
func provides(o *unstructured.Unstructured) string {
	gvk := o.GroupVersionKind()
	switch {
	case gvk.Group == "" && gvk.Kind == "Namespace":
		return "ns/" + o.GetName()
	case gvk.Group == "apiextensions.k8s.io" && gvk.Kind == "CustomResourceDefinition":
		group, _, _ := unstructured.NestedString(o.Object, "spec", "group")
		kind, _, _ := unstructured.NestedString(o.Object, "spec", "names", "kind")
		if kind == "" {
			return ""
		}
		return "gk/" + group + "/" + kind
	}
	return ""
}

// needs returns what an object needs to exist: its namespace and its group/kind.
func needs(o *unstructured.Unstructured) []string {
	gvk := o.GroupVersionKind()
	out := []string{"gk/" + gvk.Group + "/" + gvk.Kind}
	if ns := o.GetNamespace(); ns != "" {
		out = append(out, "ns/"+ns)
	}
	return out
}

// position is where an entry runs: phase rank, then wave.
type position struct{ phase, wave int }

func (p position) before(q position) bool {
	return p.phase < q.phase || (p.phase == q.phase && p.wave < q.wave)
}

// hoist moves every regular Namespace and CRD to the earliest position of
// an object that needs it, when that is earlier than its own. Hooks are not
// moved (they are created per sync), and SyncFail hooks pull nothing.
func hoist(entries []*entry) {
	earliest := map[string]position{}
	for _, e := range entries {
		rank, ok := phaseRank[e.Phase]
		if !ok {
			continue
		}
		pos := position{rank, e.Wave}
		for _, n := range needs(e.Unstructured) {
			if cur, seen := earliest[n]; !seen || pos.before(cur) {
				earliest[n] = pos
			}
		}
	}
	for _, e := range entries {
		if e.Hook != nil {
			continue
		}
		p := provides(e.Unstructured)
		if p == "" {
			continue
		}
		own := position{phaseRank[e.Phase], e.Wave}
		if to, ok := earliest[p]; ok && to.before(own) {
			e.Wave = to.wave
			e.Phase = rankPhase(to.phase)
		}
	}
}

func rankPhase(r int) PhaseName {
	for name, rank := range phaseRank {
		if rank == r {
			return name
		}
	}
	return Sync
}

// PruneOrder sorts objects to delete into waves: highest wave first and,
// within a wave, the reverse kind order. Namespaces and CRDs are placed like
// Build places them (never later than an object that needs them), so that
// reversed they go after everything in them. Hooks (objects annotated
// plumb.dev/hook) are left out: they are never pruned. An unreadable wave
// annotation counts as 0 here: these objects come from the cluster, and a
// bad annotation there must not block the prune.
func PruneOrder(objs []*unstructured.Unstructured) []Wave {
	var entries []*entry
	for i, o := range objs {
		if o == nil || o.Object == nil {
			continue
		}
		if IsHook(o) {
			continue
		}
		wave, _ := parseWave(o.GetAnnotations())
		entries = append(entries, &entry{Object: Object{Unstructured: o, Phase: Sync, Wave: wave, DeclaredWave: wave}, order: i})
	}
	hoist(entries)
	list := make([]Object, len(entries))
	for i, e := range entries {
		list[i] = e.Object
	}
	return groupWaves(list, true)
}

// Flatten lists the objects of waves in order.
func Flatten(waves []Wave) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, w := range waves {
		for _, o := range w.Objects {
			out = append(out, o.Unstructured)
		}
	}
	return out
}

// String renders a wave for logs and status: "wave 1: Namespace/a, ConfigMap/a/b".
func (w Wave) String() string {
	s := "wave " + strconv.Itoa(w.Number) + ":"
	for i, o := range w.Objects {
		if i > 0 {
			s += ","
		}
		s += " " + o.ID().String()
	}
	return s
}

// String renders a phase, one wave a line: "Sync wave 0: Namespace/a, …".
func (p Phase) String() string {
	s := ""
	for _, w := range p.Waves {
		s += string(p.Name) + " " + w.String() + "\n"
	}
	return s
}

// String renders the plan, one wave a line, SyncFail last.
func (p *Plan) String() string {
	s := ""
	for _, ph := range p.Phases {
		s += ph.String()
	}
	return s + p.SyncFail.String()
}
