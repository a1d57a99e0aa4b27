package inspect

import (
	"context"
	"fmt"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/health"
	"plumb.dev/pkg/inventory"
	"plumb.dev/pkg/manage"
	"plumb.dev/pkg/object"
	"plumb.dev/pkg/plan"
)

// Node is one object of a tree: an inventory entry, a hook, or an object
// one of them owns.
type Node struct {
	// ID is pkg/object's ID text (group/kind/namespace/name).
	ID        string        `json:"id"`
	Group     string        `json:"group"`
	Version   string        `json:"version"`
	Kind      string        `json:"kind"`
	Namespace string        `json:"namespace"`
	Name      string        `json:"name"`
	Health    health.Status `json:"health"`
	// Reason says why, in a line: pkg/health's message or the error reading
	// the object.
	Reason string `json:"reason"`
	// Hook is the phase a hook ran in; empty for a regular object.
	Hook string `json:"hook"`
	// Phase is how far a hook's run got, from its health: Running,
	// Succeeded, Failed, or Unknown (not in the cluster, or not readable).
	Phase string `json:"phase,omitempty"`
	// Wave is the sync wave the object is applied in (0 when the rendered
	// artifact is not at hand).
	Wave int `json:"wave"`
	// Drift is what status.drift says of the object.
	Drift    *ObjectDrift `json:"drift,omitempty"`
	Children []Node       `json:"children,omitempty"`
}

// Tree is a Kustomization's or HelmRelease's objects.
type Tree struct {
	// Nodes are the inventory's objects, in inventory order, with the
	// objects they own nested.
	Nodes []Node `json:"tree"`
	// Hooks are the hooks of the newest sync (status.sync) with their
	// outcome: the health of the hook object.
	Hooks []Node `json:"hooks"`
	// Notes say what the tree lacks and why (an owned kind this identity
	// may not list, hooks of a render no longer at hand).
	Notes []string `json:"notes,omitempty"`
}

// owned lists, per owner group/kind, the kinds of the objects it creates
// that a tree nests under it.
var owned = map[schema.GroupKind][]schema.GroupVersionKind{
	{Group: "apps", Kind: "Deployment"}:  {{Group: "apps", Version: "v1", Kind: "ReplicaSet"}},
	{Group: "apps", Kind: "ReplicaSet"}:  {{Version: "v1", Kind: "Pod"}},
	{Group: "apps", Kind: "StatefulSet"}: {{Version: "v1", Kind: "Pod"}},
	{Group: "apps", Kind: "DaemonSet"}:   {{Version: "v1", Kind: "Pod"}},
	{Group: "batch", Kind: "Job"}:        {{Version: "v1", Kind: "Pod"}},
	{Group: "batch", Kind: "CronJob"}:    {{Group: "batch", Version: "v1", Kind: "Job"}},
}

// Render returns the newest render's objects, or nil and why they are not
// at hand.
type Render func(ctx context.Context) ([]*unstructured.Unstructured, string)

// BuildTree reads the live state of a's inventory with c (ReadLive: a list
// per kind and namespace) and returns it as a tree: each object's health,
// the ReplicaSets and Pods its workloads own nested by ownerReferences,
// the wave of each object and the hooks of the newest sync. render, called
// while the inventory is read, gives the newest render's objects; without
// them (render nil, or no render at hand) waves are 0 and hooks are not
// known.
func BuildTree(ctx context.Context, c client.Client, a *Applied, render Render) Tree {
	t := Tree{Nodes: []Node{}, Hooks: []Node{}}
	var entries []kustomizev1.InventoryEntry
	if a.Inventory != nil {
		entries = a.Inventory.Entries
	}
	var rendered []*unstructured.Unstructured
	var renderNote string
	fetched := make(chan struct{})
	go func() {
		defer close(fetched)
		if render != nil {
			rendered, renderNote = render(ctx)
		}
	}()
	live := ReadLive(ctx, c, entries)
	<-fetched
	if renderNote != "" {
		t.Notes = append(t.Notes, renderNote)
	}
	waves, hooks, note := a.planOf(c.RESTMapper(), rendered)
	if note != "" {
		t.Notes = append(t.Notes, note)
	}
	var hookEntries []kustomizev1.InventoryEntry
	for _, h := range hooks {
		hookEntries = append(hookEntries, inventory.EntryOf(h.Unstructured))
	}
	if len(hookEntries) > 0 {
		hookLive := ReadLive(ctx, c, hookEntries)
		for id, o := range hookLive.Objects {
			live.Objects[id] = o
		}
		for id, err := range hookLive.Errors {
			live.Errors[id] = err
		}
	}
	children, notes := readOwned(ctx, c, live)
	t.Notes = append(t.Notes, notes...)
	drifts := DriftByObject(a.Drift)

	for _, e := range entries {
		n := a.nodeOf(e, live, children)
		n.Wave = waves[inventory.IDOf(e)]
		n.Drift = drifts[inventory.IDOf(e).String()]
		t.Nodes = append(t.Nodes, n)
	}
	syncID := a.syncID()
	for i, h := range hooks {
		n := a.nodeOf(hookEntries[i], live, children)
		n.Hook, n.Wave = string(h.Phase), h.Wave
		obj := live.Objects[inventory.IDOf(hookEntries[i])]
		switch {
		case obj == nil && n.Health == health.Missing:
			n.Reason = "not in the cluster: deleted by its delete policy, or not run yet"
		case obj != nil && obj.GetLabels()[plan.HookSyncLabel] != syncID:
			n.Reason = "from an earlier sync; " + n.Reason
		}
		n.Phase = runPhaseOf(n.Health)
		t.Hooks = append(t.Hooks, n)
	}
	return t
}

// runPhaseOf words a hook's health as how far its run got.
func runPhaseOf(h health.Status) string {
	switch h {
	case health.Healthy:
		return "Succeeded"
	case health.Degraded:
		return "Failed"
	case health.Progressing, health.Suspended:
		return "Running"
	}
	return "Unknown"
}

// syncID is the id of the newest sync, "" when status records none.
func (a *Applied) syncID() string {
	s := a.Sync
	if s == nil || s.StartedAt == nil || s.Digest == "" {
		return ""
	}
	return plan.SyncID(s.Digest, s.Generation, s.StartedAt.Time)
}

// SyncedHooks are the hooks of the newest sync as it created them: a
// hook with only a generateName carries the name that sync gave it. Nil
// when rendered is not the render that sync applied.
func (a *Applied) SyncedHooks(mapper apimeta.RESTMapper, rendered []*unstructured.Unstructured) []*unstructured.Unstructured {
	_, hooks, _ := a.planOf(mapper, rendered)
	out := make([]*unstructured.Unstructured, 0, len(hooks))
	for _, h := range hooks {
		out = append(out, h.Unstructured)
	}
	return out
}

// planOf plans rendered as the newest sync did: the wave of each regular
// object, and the hooks with the names that sync gave them. The hooks are
// known only when rendered is the render that sync applied.
func (a *Applied) planOf(mapper apimeta.RESTMapper, rendered []*unstructured.Unstructured) (map[object.ID]int, []plan.Object, string) {
	waves := map[object.ID]int{}
	if rendered == nil {
		return waves, nil, ""
	}
	syncID := a.syncID()
	sameRender := syncID != "" && a.Rendered != nil && a.Rendered.Digest == a.Sync.Digest
	seed := syncID
	if !sameRender {
		seed = "unknown" // names of generateName hooks are not looked up then
	}
	objs := make([]*unstructured.Unstructured, 0, len(rendered))
	for _, o := range rendered {
		o = o.DeepCopy()
		// The key must match the inventory's, which holds the namespace
		// the sync gave the object (an unknown kind keeps none).
		_ = manage.Resolve(mapper, o, a.Namespace)
		objs = append(objs, o)
	}
	install := a.Sync != nil && a.installSync()
	p, err := plan.Build(objs, plan.Options{SyncID: seed, Install: install})
	if err != nil {
		return waves, nil, "the rendered objects do not plan: " + err.Error()
	}
	for _, ph := range p.Phases {
		for _, w := range ph.Waves {
			for _, o := range w.Objects {
				if o.Hook == nil {
					waves[o.ID()] = o.Wave
				}
			}
		}
	}
	if !sameRender {
		if syncID == "" {
			return waves, nil, ""
		}
		return waves, nil, "the hooks of the newest sync are not shown: it applied a render (" + a.Sync.Digest + ") that is not the newest"
	}
	return waves, p.Hooks(), ""
}

// installSync says whether the newest sync was an install (Helm hooks run
// on their *-install phases then), as sync-controller decided it before the
// sync: a HelmRelease with no other release deployed, a Kustomization that
// applied nothing yet. After a Kustomization's first sync succeeds this
// reads false, so its *-install hooks show as not run.
func (a *Applied) installSync() bool {
	hr, ok := a.Object.(*helmv2.HelmRelease)
	if !ok {
		return a.LastApplied == ""
	}
	for _, s := range hr.Status.History {
		if s.Digest != a.Sync.Digest && (s.Status == helmv2.ReleaseStatusDeployed || s.Status == helmv2.ReleaseStatusSuperseded) {
			return false
		}
	}
	return true
}

// nodeOf is an entry's node with its health and the objects it owns.
func (a *Applied) nodeOf(e kustomizev1.InventoryEntry, live LiveObjects, children map[types.UID][]*unstructured.Unstructured) Node {
	id := inventory.IDOf(e)
	n := Node{ID: id.Text(), Group: e.Group, Version: e.Version, Kind: e.Kind, Namespace: e.Namespace, Name: e.Name}
	obj, err := live.Get(e)
	if err != nil {
		n.Health, n.Reason = health.Unknown, oneLine(err.Error())
		return n
	}
	h := a.Health(obj)
	n.Health, n.Reason = h.Status, oneLine(h.Message)
	if obj != nil {
		n.Children = a.ownedNodes(obj, children, 0)
	}
	return n
}

// maxDepth bounds the nesting of owned objects (a CronJob's Jobs' Pods is
// three levels); ownerReferences could form a cycle.
const maxDepth = 4

// ownedNodes are the nodes of the objects owner owns, by name.
func (a *Applied) ownedNodes(owner *unstructured.Unstructured, children map[types.UID][]*unstructured.Unstructured, depth int) []Node {
	if depth >= maxDepth {
		return nil
	}
	var out []Node
	for _, c := range children[owner.GetUID()] {
		gvk := c.GroupVersionKind()
		h := a.Health(c)
		n := Node{
			ID: object.IDOf(c).Text(), Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind,
			Namespace: c.GetNamespace(), Name: c.GetName(), Health: h.Status, Reason: oneLine(h.Message),
		}
		n.Children = a.ownedNodes(c, children, depth+1)
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// readOwned lists, in each namespace that has workloads among the live
// objects, the kinds those workloads create, and indexes them by owner
// uid. A kind this identity may not list is left out with a note.
func readOwned(ctx context.Context, c client.Reader, live LiveObjects) (map[types.UID][]*unstructured.Unstructured, []string) {
	// Which kinds to list where: a Deployment's ReplicaSets' Pods too.
	want := map[listKey]bool{}
	var add func(gk schema.GroupKind, ns string)
	add = func(gk schema.GroupKind, ns string) {
		for _, gvk := range owned[gk] {
			k := listKey{gvk: gvk, namespace: ns}
			if !want[k] {
				want[k] = true
				add(gvk.GroupKind(), ns)
			}
		}
	}
	for _, obj := range live.Objects {
		if obj.GetNamespace() != "" {
			add(obj.GroupVersionKind().GroupKind(), obj.GetNamespace())
		}
	}
	keys := make([]listKey, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	type listed struct {
		objs map[string]*unstructured.Unstructured
		err  error
	}
	results := make([]listed, len(keys))
	sem := make(chan struct{}, readConcurrency)
	done := make(chan struct{})
	for i, k := range keys {
		go func() {
			defer func() { done <- struct{}{} }()
			sem <- struct{}{}
			defer func() { <-sem }()
			objs, err := listLive(ctx, c, k)
			results[i] = listed{objs, err}
		}()
	}
	for range keys {
		<-done
	}
	children := map[types.UID][]*unstructured.Unstructured{}
	var notes []string
	for i, r := range results {
		if r.err != nil {
			k := keys[i]
			why := r.err.Error()
			if apierrors.IsForbidden(r.err) {
				why = "forbidden"
			}
			notes = append(notes, fmt.Sprintf("%s in namespace %s not listed (%s)", k.gvk.Kind+"s", k.namespace, oneLine(why)))
			continue
		}
		for _, obj := range r.objs {
			for _, ref := range obj.GetOwnerReferences() {
				if ref.Controller != nil && *ref.Controller {
					children[ref.UID] = append(children[ref.UID], obj)
				}
			}
		}
	}
	sort.Strings(notes)
	return children, notes
}

// maxReason bounds a reason's length: a line in a tree, not a log.
const maxReason = 300

// oneLine flattens a message to one bounded line.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > maxReason {
		s = s[:maxReason] + "…"
	}
	return s
}
