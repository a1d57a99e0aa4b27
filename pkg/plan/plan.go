package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/argocd"
	"plumb.dev/pkg/object"
)

// PhaseName names a sync phase.
type PhaseName string

// The phases, in the order a sync runs them; SyncFail only after a failure.
const (
	PreSync  PhaseName = "PreSync"
	Sync     PhaseName = "Sync"
	PostSync PhaseName = "PostSync"
	SyncFail PhaseName = "SyncFail"
)

// The phases of a deletion (BuildDelete), in the order they run: PreDelete
// before anything is pruned, PostDelete once the pruned objects are gone.
// A sync never plans them.
const (
	PreDelete  PhaseName = "PreDelete"
	PostDelete PhaseName = "PostDelete"
)

// phaseRank orders the phases for hoisting; SyncFail has none.
var phaseRank = map[PhaseName]int{PreSync: 0, Sync: 1, PostSync: 2}

// phaseOrder is every phase plumb.dev/hook accepts, in the order they run:
// the order a hook's phases are kept in when read from Helm's annotation.
var phaseOrder = []PhaseName{PreSync, Sync, PostSync, SyncFail, PreDelete, PostDelete}

// deleting says whether a phase belongs to a deletion rather than a sync.
func deleting(p PhaseName) bool { return p == PreDelete || p == PostDelete }

// DeletePolicy says when a hook is deleted.
type DeletePolicy string

// The delete policies of plumb.dev/hook-delete-policy.
const (
	// HookSucceeded deletes the hook once it succeeded.
	HookSucceeded DeletePolicy = "HookSucceeded"
	// HookFailed deletes the hook once it failed.
	HookFailed DeletePolicy = "HookFailed"
	// BeforeHookCreation deletes the previous sync's hook right before the
	// hook is created again; the default.
	BeforeHookCreation DeletePolicy = "BeforeHookCreation"
)

// Options of Build.
type Options struct {
	// SyncID identifies one sync, e.g. the revision and a sync counter. It
	// seeds the names of generateName hooks; Build refuses such a hook when
	// SyncID is empty.
	SyncID string
	// Install says that nothing was applied successfully yet: a Helm hook
	// runs on its *-install phases then, and on its *-upgrade phases on
	// every later sync (see the package doc, "Helm hooks").
	Install bool
	// Rollback says that the sync applies a release again (a HelmRelease's
	// rollback remediation): Helm's pre-rollback and post-rollback hooks
	// run in PreSync and PostSync, and no install or upgrade hook. It wins
	// over Install.
	Rollback bool
}

// Hook describes an object that is a hook.
type Hook struct {
	// Phases the hook runs in, in the order of the annotation, deduplicated.
	Phases []PhaseName
	// DeletePolicies, deduplicated; [BeforeHookCreation] when not annotated.
	DeletePolicies []DeletePolicy
	// GenerateName is the object's metadata.generateName when Build named the
	// hook from it, empty otherwise.
	GenerateName string
}

// HasPolicy reports whether the hook has the delete policy p.
func (h *Hook) HasPolicy(p DeletePolicy) bool {
	for _, q := range h.DeletePolicies {
		if q == p {
			return true
		}
	}
	return false
}

// Object is one task of the plan: the object to apply, with the phase and
// wave it runs in (after hoisting) and, for a hook, the hook's settings.
type Object struct {
	*unstructured.Unstructured
	// Phase is the phase the task runs in: a hook runs once in each of its
	// phases, a hoisted Namespace or CRD may move to an earlier one.
	Phase PhaseName
	// Wave is the wave the object runs in; DeclaredWave the one annotated.
	// They differ for a hoisted Namespace or CRD.
	Wave, DeclaredWave int
	// Hook is nil for a regular object.
	Hook *Hook
}

// ID returns the object's identity.
func (o Object) ID() object.ID { return object.IDOf(o.Unstructured) }

// Wave is the objects of one wave, in apply order.
type Wave struct {
	Number  int
	Objects []Object
}

// Phase is the waves of one phase, in ascending wave order.
type Phase struct {
	Name  PhaseName
	Waves []Wave
}

// Plan is the order of a sync.
type Plan struct {
	// Phases are PreSync, Sync and PostSync in that order, each only when it
	// has objects.
	Phases []Phase
	// SyncFail holds the SyncFail hooks, run only when a task fails; its
	// Waves are empty when there are none.
	SyncFail Phase
	// Inventory lists the regular (non-hook) objects in apply order: what
	// the Kustomization owns and may prune later.
	Inventory []*unstructured.Unstructured
}

// Hooks returns every hook task of every phase, SyncFail included, in the
// order they run.
func (p *Plan) Hooks() []Object {
	var out []Object
	for _, ph := range append(append([]Phase{}, p.Phases...), p.SyncFail) {
		for _, w := range ph.Waves {
			for _, o := range w.Objects {
				if o.Hook != nil {
					out = append(out, o)
				}
			}
		}
	}
	return out
}

// entry is an object placed in a phase during Build.
type entry struct {
	Object
	order int // input position, for errors and ties
}

// Build plans the sync of objs. It does not modify objs, and it does not
// copy them either: a regular object's task, and a named hook's, holds the
// input object itself, and Inventory lists the inputs. Only a generateName
// hook is a copy, one per phase, each carrying the name Build gave it. The
// plan shares its objects with the caller's slice (sync-controller keeps
// both in its manifests cache): whoever changes a planned object copies it
// first, as the engine's writes and the hooks' labels do. (A copy of every
// object was a fifth of the allocations of a sync of 1,000 objects, kept
// live with the cache: docs/bench/sync.md, branch h-handoff46.) Errors
// (a bad wave or hook annotation, an object without kind or name, a
// duplicate) are all reported together, each naming its object.
func Build(objs []*unstructured.Unstructured, opts Options) (*Plan, error) {
	event := helmEvent(opts.Install)
	if opts.Rollback {
		event = helmRollback
	}
	entries, err := planEntries(objs, opts, event)
	if err != nil {
		return nil, err
	}
	hoist(entries)

	p := &Plan{SyncFail: Phase{Name: SyncFail}}
	for _, name := range []PhaseName{PreSync, Sync, PostSync, SyncFail} {
		var in []Object
		for _, e := range entries {
			if e.Phase == name {
				in = append(in, e.Object)
			}
		}
		ph := Phase{Name: name, Waves: groupWaves(in, false)}
		if name == SyncFail {
			p.SyncFail = ph
		} else if len(ph.Waves) > 0 {
			p.Phases = append(p.Phases, ph)
		}
	}
	for _, ph := range p.Phases {
		for _, w := range ph.Waves {
			for _, o := range w.Objects {
				if o.Hook == nil {
					p.Inventory = append(p.Inventory, o.Unstructured)
				}
			}
		}
	}
	return p, nil
}

// planEntries plans every object for the event and checks the entries
// for duplicates; the errors are all reported together.
func planEntries(objs []*unstructured.Unstructured, opts Options, event helmHookEvent) ([]*entry, error) {
	var errs []error
	var entries []*entry
	for i, src := range objs {
		es, err := plan(i, src, opts, event)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		entries = append(entries, es...)
	}
	errs = append(errs, duplicates(entries)...)
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return entries, nil
}

// plan reads one input object's annotations and returns its entries: one
// for a regular object, one per phase for a hook. event is what is planned
// (a sync, install or upgrade, or a deletion): a hook gets entries only for
// the phases of that event, a regular object only in a sync.
func plan(i int, src *unstructured.Unstructured, opts Options, event helmHookEvent) ([]*entry, error) {
	if src == nil || src.Object == nil {
		return nil, fmt.Errorf("object #%d is empty", i+1)
	}
	if src.GetKind() == "" {
		return nil, fmt.Errorf("object #%d (name %q) has no kind", i+1, src.GetName())
	}
	if event == helmDelete && !IsHook(src) {
		return nil, nil // a deletion plans hooks only; regular objects are pruned
	}
	ann := src.GetAnnotations()
	wave, err := parseWave(ann)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", nameForError(i, src), err)
	}
	hook, err := parseHook(ann, event)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", nameForError(i, src), err)
	}
	if hook != nil {
		hook.Phases = slices.DeleteFunc(hook.Phases, func(p PhaseName) bool { return deleting(p) != (event == helmDelete) })
	}
	if hook != nil && len(hook.Phases) == 0 {
		// A hook of no phase of this event: a delete hook in a sync (or a
		// sync hook in a deletion), a Helm test or rollback hook, or an
		// install hook on an upgrade (or the other way round). It is
		// neither applied nor in the inventory.
		return nil, nil
	}
	if hook == nil {
		if src.GetName() == "" {
			if src.GetGenerateName() != "" {
				return nil, fmt.Errorf("%s: metadata.generateName without a name is only allowed on a hook (annotation %s or %s)", nameForError(i, src), kustomizev1.HookAnnotation, argocd.HookAnnotation)
			}
			return nil, fmt.Errorf("%s: has no metadata.name", nameForError(i, src))
		}
		return []*entry{{Object: Object{Unstructured: src, Phase: Sync, Wave: wave, DeclaredWave: wave}, order: i}}, nil
	}
	if src.GetName() == "" && src.GetGenerateName() == "" {
		return nil, fmt.Errorf("%s: a hook needs metadata.name or metadata.generateName", nameForError(i, src))
	}
	if src.GetName() == "" && opts.SyncID == "" {
		return nil, fmt.Errorf("%s: naming a generateName hook needs a sync id", nameForError(i, src))
	}
	out := make([]*entry, 0, len(hook.Phases))
	for _, ph := range hook.Phases {
		obj := src
		h := *hook
		if src.GetName() == "" {
			// Named for this phase and sync: a copy of its own.
			obj = src.DeepCopy()
			h.GenerateName = obj.GetGenerateName()
			obj.SetName(hookName(opts.SyncID, ph, obj, i))
			obj.SetGenerateName("")
		}
		out = append(out, &entry{Object: Object{Unstructured: obj, Phase: ph, Wave: wave, DeclaredWave: wave, Hook: &h}, order: i})
	}
	return out, nil
}

// nameForError names an input object as well as it can.
func nameForError(i int, o *unstructured.Unstructured) string {
	if o.GetName() == "" && o.GetGenerateName() != "" {
		s := o.GetKind() + "/"
		if o.GetNamespace() != "" {
			s += o.GetNamespace() + "/"
		}
		return s + o.GetGenerateName() + "* (object #" + strconv.Itoa(i+1) + ")"
	}
	if o.GetName() == "" {
		return fmt.Sprintf("%s #%d", o.GetKind(), i+1)
	}
	return object.IDOf(o).String()
}

// parseWave reads plumb.dev/sync-wave: an integer, 0 when absent. Without
// it, argocd.argoproj.io/sync-wave when it is an integer (Argo CD's
// reading: anything else falls through). A Helm hook (helm.sh/hook, no
// plumb.dev/hook) without either takes its helm.sh/hook-weight, read as
// Helm reads it: anything but an integer is 0.
func parseWave(ann map[string]string) (int, error) {
	v, ok := ann[kustomizev1.SyncWaveAnnotation]
	if !ok {
		if n, ok := argocd.Wave(ann); ok {
			return n, nil
		}
		_, plumbHook := ann[kustomizev1.HookAnnotation]
		_, helmHook := ann[helmv2.HookAnnotation]
		if helmHook && !plumbHook {
			n, _ := strconv.ParseInt(strings.TrimSpace(ann[helmv2.HookWeightAnnotation]), 10, 32)
			return int(n), nil
		}
		return 0, nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
	if err != nil {
		return 0, fmt.Errorf("annotation %s: %q is not an integer", kustomizev1.SyncWaveAnnotation, v)
	}
	return int(n), nil
}

// phaseList names the phases plumb.dev/hook accepts, for errors.
const phaseList = "PreSync, Sync, PostSync, SyncFail, PreDelete or PostDelete"

// parseHook reads whether the object is a hook and of which phases:
// plumb.dev/hook, else argocd.argoproj.io/hook (parseArgoHook), else
// Helm's hook annotations (parseHelmHook); nil when it is none. Phases
// are all the hook's phases, for a sync and a deletion alike (plan keeps
// those of the event); a Helm hook's are only those of the event. A hook
// with no phase (a Helm test hook, an Argo CD Skip) has empty Phases. Its
// delete policies come from plumb.dev/hook-delete-policy when set; a hook
// of plumb.dev/hook reads no other, one of Argo CD's or Helm's reads
// their policy annotations together, as Argo CD does (deletePolicies).
func parseHook(ann map[string]string, event helmHookEvent) (*Hook, error) {
	var h *Hook
	v, plumbHook := ann[kustomizev1.HookAnnotation]
	if plumbHook {
		h = &Hook{}
		for _, f := range argocd.Items(v) {
			p := PhaseName(f)
			if !contains(phaseOrder, p) {
				return nil, fmt.Errorf("annotation %s: unknown phase %q (want %s)", kustomizev1.HookAnnotation, f, phaseList)
			}
			if !contains(h.Phases, p) {
				h.Phases = append(h.Phases, p)
			}
		}
		if len(h.Phases) == 0 {
			return nil, fmt.Errorf("annotation %s is empty: name at least one phase (%s)", kustomizev1.HookAnnotation, phaseList)
		}
	} else if h = parseArgoHook(ann); h == nil {
		if _, helm := ann[helmv2.HookAnnotation]; !helm {
			return nil, nil
		}
		h = parseHelmHook(ann, event)
	}
	policies, err := deletePolicies(ann, plumbHook)
	if err != nil {
		return nil, err
	}
	h.DeletePolicies = policies
	return h, nil
}

// argoPhases maps Argo CD's hook types onto Plumb's phases: PreDelete and
// PostDelete run when the Kustomization is deleted (BuildDelete), not in
// a sync; Skip leaves the object out of the sync altogether.
var argoPhases = map[string]PhaseName{
	argocd.PreSync: PreSync, argocd.Sync: Sync, argocd.PostSync: PostSync, argocd.SyncFail: SyncFail,
	argocd.PreDelete: PreDelete, argocd.PostDelete: PostDelete,
}

// parseArgoHook reads argocd.argoproj.io/hook as Argo CD does; nil when
// the object is not an Argo CD hook. Unknown types are left out; when no
// type is known, Argo CD reads the Helm hook annotations instead (nil
// here, and parseHook goes on to them) and otherwise the object is a
// hook that never runs. Skip among the types wins over the others: the
// object is neither applied nor pruned while Git has it.
func parseArgoHook(ann map[string]string) *Hook {
	types, ok := argocd.Hook(ann)
	if !ok {
		return nil
	}
	if _, helm := ann[helmv2.HookAnnotation]; len(types) == 0 && helm {
		return nil
	}
	h := &Hook{}
	if contains(types, argocd.Skip) {
		return h
	}
	for _, t := range types {
		if p, ok := argoPhases[t]; ok && !contains(h.Phases, p) {
			h.Phases = append(h.Phases, p)
		}
	}
	return h
}

// deletePolicies reads plumb.dev/hook-delete-policy, strictly; without
// it, for a hook not of plumb.dev/hook, the known values of Argo CD's and
// Helm's policy annotations, Argo CD's first; BeforeHookCreation when
// none.
func deletePolicies(ann map[string]string, plumbHook bool) ([]DeletePolicy, error) {
	var out []DeletePolicy
	if v, ok := ann[kustomizev1.HookDeletePolicyAnnotation]; ok {
		for _, f := range argocd.Items(v) {
			switch p := DeletePolicy(f); p {
			case HookSucceeded, HookFailed, BeforeHookCreation:
				if !contains(out, p) {
					out = append(out, p)
				}
			default:
				return nil, fmt.Errorf("annotation %s: unknown policy %q (want HookSucceeded, HookFailed or BeforeHookCreation)", kustomizev1.HookDeletePolicyAnnotation, f)
			}
		}
	} else if !plumbHook {
		for _, f := range argocd.HookDeletePolicies(ann) {
			if p := DeletePolicy(f); !contains(out, p) {
				out = append(out, p)
			}
		}
		for _, f := range argocd.Items(ann[helmv2.HookDeletePolicyAnnotation]) {
			if p, ok := helmDeletePolicies[strings.ToLower(f)]; ok && !contains(out, p) {
				out = append(out, p)
			}
		}
	}
	if len(out) == 0 {
		out = []DeletePolicy{BeforeHookCreation}
	}
	return out, nil
}

// helmHookEvent is what Helm would be doing: installing, upgrading or
// uninstalling the release. It picks which of Helm's hooks run.
type helmHookEvent int

const (
	helmInstall helmHookEvent = iota
	helmUpgrade
	helmDelete
	helmRollback
)

// helmEvent is the event of a sync: the install, or an upgrade.
func helmEvent(install bool) helmHookEvent {
	if install {
		return helmInstall
	}
	return helmUpgrade
}

// helmPhases maps Helm's hook types onto Plumb's phases, per event. The
// type missing (test) is never run.
var helmPhases = map[helmHookEvent]map[string]PhaseName{
	helmInstall:  {"pre-install": PreSync, "post-install": PostSync},
	helmUpgrade:  {"pre-upgrade": PreSync, "post-upgrade": PostSync},
	helmDelete:   {"pre-delete": PreDelete, "post-delete": PostDelete},
	helmRollback: {"pre-rollback": PreSync, "post-rollback": PostSync},
}

// helmDeletePolicies maps helm.sh/hook-delete-policy values onto Plumb's.
var helmDeletePolicies = map[string]DeletePolicy{
	"before-hook-creation": BeforeHookCreation,
	"hook-succeeded":       HookSucceeded,
	"hook-failed":          HookFailed,
}

// parseHelmHook reads helm.sh/hook as Helm does: values are trimmed and
// lower-cased, and a hook type Helm does not know is left out (it never
// runs). Phases holds the phases of this event only, in phase order.
// (Helm's delete policies are read with the others: deletePolicies.)
func parseHelmHook(ann map[string]string, event helmHookEvent) *Hook {
	h := &Hook{}
	for _, f := range argocd.Items(ann[helmv2.HookAnnotation]) {
		if p, ok := helmPhases[event][strings.ToLower(f)]; ok && !contains(h.Phases, p) {
			h.Phases = append(h.Phases, p)
		}
	}
	slices.SortFunc(h.Phases, func(a, b PhaseName) int { return slices.Index(phaseOrder, a) - slices.Index(phaseOrder, b) })
	return h
}

func contains[T comparable](list []T, v T) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// maxNameLen keeps generated names valid for kinds whose names must be DNS
// labels (a Job's pods carry its name in a label), as the API server does
// for generateName.
const maxNameLen = 63

// hookName is generateName plus eight hex digits of sha256 over the sync id,
// the phase, the object's group, kind, namespace and generateName, and its
// input position (two hooks may share a generateName).
func hookName(syncID string, phase PhaseName, o *unstructured.Unstructured, order int) string {
	gvk := o.GroupVersionKind()
	sum := sha256.Sum256([]byte(strings.Join([]string{
		syncID, string(phase), gvk.Group, gvk.Kind, o.GetNamespace(), o.GetGenerateName(), strconv.Itoa(order),
	}, "\x00")))
	suffix := hex.EncodeToString(sum[:])[:8]
	base := o.GetGenerateName()
	if len(base) > maxNameLen-len(suffix) {
		base = base[:maxNameLen-len(suffix)]
	}
	return base + suffix
}

// duplicates reports two regular objects with the same identity, a hook
// planned twice in one phase, and a hook with the identity of a regular
// object (applying one would overwrite the other, and deleting the hook
// would delete the object).
func duplicates(entries []*entry) []error {
	type key struct {
		phase PhaseName
		id    object.ID
	}
	keyOf := func(e *entry, phase PhaseName) key { return key{phase, e.ID()} }
	regular, hooks := map[key]*entry{}, map[key]*entry{}
	var errs []error
	for _, e := range entries {
		if e.Hook != nil {
			continue
		}
		if first, ok := regular[keyOf(e, "")]; ok {
			errs = append(errs, fmt.Errorf("%s: appears twice (objects #%d and #%d)", e.ID(), first.order+1, e.order+1))
			continue
		}
		regular[keyOf(e, "")] = e
	}
	for _, e := range entries {
		if e.Hook == nil {
			continue
		}
		if obj, ok := regular[keyOf(e, "")]; ok {
			errs = append(errs, fmt.Errorf("%s: hook (object #%d) has the identity of a regular object (object #%d)", e.ID(), e.order+1, obj.order+1))
			continue
		}
		if first, ok := hooks[keyOf(e, e.Phase)]; ok {
			if first.order != e.order {
				errs = append(errs, fmt.Errorf("%s: two %s hooks with this name (objects #%d and #%d)", e.ID(), e.Phase, first.order+1, e.order+1))
			}
			continue
		}
		hooks[keyOf(e, e.Phase)] = e
	}
	return errs
}
