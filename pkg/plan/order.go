package plan

import (
	"sort"
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	kustomizev1 "plumb.dev/api/kustomize/v1"
)

// kindOrder is the apply order of kinds within a wave, keyed by group/kind.
// A kind counts only in its own API group (and the legacy extensions group
// where it once lived); any other kind is ordered after these.
var kindOrder = map[string]int{}

func init() {
	for i, gks := range [][]string{
		{"/Namespace"},
		{"networking.k8s.io/NetworkPolicy", "extensions/NetworkPolicy"},
		{"/ResourceQuota"},
		{"/LimitRange"},
		{"/ServiceAccount"},
		{"/Secret"},
		{"/ConfigMap"},
		{"storage.k8s.io/StorageClass"},
		{"/PersistentVolume"},
		{"/PersistentVolumeClaim"},
		{"apiextensions.k8s.io/CustomResourceDefinition"},
		{"rbac.authorization.k8s.io/ClusterRole"},
		{"rbac.authorization.k8s.io/ClusterRoleBinding"},
		{"rbac.authorization.k8s.io/Role"},
		{"rbac.authorization.k8s.io/RoleBinding"},
		{"/Service"},
		{"apps/DaemonSet", "extensions/DaemonSet"},
		{"/Pod"},
		{"apps/ReplicaSet", "extensions/ReplicaSet"},
		{"apps/Deployment", "extensions/Deployment"},
		{"autoscaling/HorizontalPodAutoscaler"},
		{"apps/StatefulSet"},
		{"batch/Job"},
		{"batch/CronJob"},
		{"networking.k8s.io/IngressClass"},
		{"networking.k8s.io/Ingress", "extensions/Ingress"},
		{"apiregistration.k8s.io/APIService"},
	} {
		for _, gk := range gks {
			kindOrder[gk] = i
		}
	}
}

// otherKinds ranks every kind not in kindOrder.
const otherKinds = 1 << 20

func kindRank(o *unstructured.Unstructured) int {
	gvk := o.GroupVersionKind()
	if r, ok := kindOrder[gvk.Group+"/"+gvk.Kind]; ok {
		return r
	}
	return otherKinds
}

// less is the order within a wave: kind rank; for other kinds the kind
// name, then the group; then namespace and name. Hooks of one generateName
// differ in name, so the order is total for a valid plan.
func less(a, b *unstructured.Unstructured) bool {
	ra, rb := kindRank(a), kindRank(b)
	if ra != rb {
		return ra < rb
	}
	ga, gb := a.GroupVersionKind(), b.GroupVersionKind()
	if ga.Kind != gb.Kind {
		return ga.Kind < gb.Kind
	}
	if ga.Group != gb.Group {
		return ga.Group < gb.Group
	}
	if a.GetNamespace() != b.GetNamespace() {
		return a.GetNamespace() < b.GetNamespace()
	}
	return a.GetName() < b.GetName()
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
		rank, ok := phaseRank[e.phase]
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
		own := position{phaseRank[e.phase], e.Wave}
		if to, ok := earliest[p]; ok && to.before(own) {
			e.Wave = to.wave
			e.phase = rankPhase(to.phase)
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
		ann := o.GetAnnotations()
		if _, hook := ann[kustomizev1.HookAnnotation]; hook {
			continue
		}
		wave, _ := parseWave(ann)
		entries = append(entries, &entry{Object: Object{Unstructured: o, Wave: wave, DeclaredWave: wave}, phase: Sync, order: i})
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
		s += " " + o.ID()
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
