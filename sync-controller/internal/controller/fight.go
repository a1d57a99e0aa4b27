package controller

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/diff"
	"plumb.dev/pkg/events"
	"plumb.dev/pkg/object"
	"plumb.dev/pkg/reconcile"
	"plumb.dev/sync-controller/internal/engine"
)

// FightOptions set fight detection (docs/design/sync-engine.md, "Fights").
type FightOptions struct {
	// Window: a foreign manager that rewrites the fields sync-controller
	// reverted, within Window of the revert, is fighting
	// (--drift-fight-window); zero turns fight detection off, and every
	// drift is reverted at once, however often it comes back.
	Window time.Duration
	// FirstBackoff is the first hold of a contested correction; each next
	// one is ten times longer, up to the Kustomization's interval.
	FirstBackoff time.Duration
}

// BindFlags binds --drift-fight-window and --drift-fight-backoff.
func (o *FightOptions) BindFlags(fs *pflag.FlagSet) {
	fs.DurationVar(&o.Window, "drift-fight-window", 30*time.Second,
		"A foreign field manager that rewrites fields within this long of their correction is fighting: further corrections of that object back off (0 turns fight detection off). The default catches a HorizontalPodAutoscaler's 15 s sync period.")
	fs.DurationVar(&o.FirstBackoff, "drift-fight-backoff", 100*time.Millisecond,
		"The first hold of a contested correction; each next one is ten times longer, up to the Kustomization's interval.")
}

// fightKey is one object and one foreign field manager.
type fightKey struct {
	id      object.ID
	manager string
}

// fight is what sync-controller remembers of the drift corrections of one
// object against one foreign field manager. Until the manager rewrites the
// fields within the window of a revert it is only the last revert; then it
// is contested until the fight ends.
type fight struct {
	fields     []string
	hash       string // the desired state reverted to
	generation int64  // the Kustomization's generation at the last decision
	lastRevert time.Time
	reverts    int
	contested  bool
	announced  bool // the DriftContested event went out
	since      time.Time
	step       int       // backoff steps taken
	heldUntil  time.Time // a correction held back until then; zero when none
	controller string    // a known controller that writes the fields
}

// fightTracker remembers corrections per Kustomization, object and foreign
// field manager. It lives as long as the process: a restart forgets every
// fight, and the first repeat after it starts the fight over.
type fightTracker struct {
	mu sync.Mutex
	m  map[types.NamespacedName]map[fightKey]*fight
}

// fightEnd is a fight that is over, and why.
type fightEnd struct {
	key fightKey
	f   *fight
	why string
}

func (t *fightTracker) of(ks types.NamespacedName) map[fightKey]*fight {
	if t.m == nil {
		t.m = map[types.NamespacedName]map[fightKey]*fight{}
	}
	m := t.m[ks]
	if m == nil {
		m = map[fightKey]*fight{}
		t.m[ks] = m
	}
	return m
}

// forget drops a Kustomization's fights (it was deleted).
func (t *fightTracker) forget(ks types.NamespacedName) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.m, ks)
}

// fightGuard is the engine.DriftGuard of one run of one Kustomization.
type fightGuard struct {
	t          *fightTracker
	opts       FightOptions
	ks         types.NamespacedName
	generation int64
	maxBackoff time.Duration
	now        func() time.Time
}

// Wait holds back the check of an object whose contested correction is not
// due yet, as long as neither Git (the hash) nor the Kustomization (its
// generation: an ignore rule) changed.
func (g fightGuard) Wait(id object.ID, hash string) bool {
	g.t.mu.Lock()
	defer g.t.mu.Unlock()
	now := g.now()
	for k, f := range g.t.of(g.ks) {
		if k.id == id && f.contested && now.Before(f.heldUntil) && f.hash == hash && f.generation == g.generation {
			return true
		}
	}
	return false
}

// Revert decides about drift just found: at once, unless a manager that
// owns the drifted fields rewrote them within the window of the last revert
// (the fight starts) or is already fighting; then the correction is held
// for the next backoff step (0.1 s, 1 s, 10 s, … up to the interval) and
// made when that is over.
func (g fightGuard) Revert(res engine.Result) bool {
	g.t.mu.Lock()
	defer g.t.mu.Unlock()
	now := g.now()
	fields := changedPaths(res)
	revert := true
	for _, m := range managersOf(res) {
		f := g.t.of(g.ks)[fightKey{res.ID, m}]
		if f == nil || !overlaps(f.fields, fields) || (!f.contested && now.Sub(f.lastRevert) > g.opts.Window) {
			continue
		}
		if !f.contested {
			f.contested, f.since, f.step = true, now, 0
		}
		f.fields, f.generation = union(f.fields, fields), g.generation
		switch {
		case f.heldUntil.IsZero():
			f.heldUntil = now.Add(backoff(g.opts.FirstBackoff, f.step, g.maxBackoff))
			f.step++
			revert = false
		case now.Before(f.heldUntil):
			revert = false
		}
	}
	return revert
}

// backoff is first·10^step, at most max.
func backoff(first time.Duration, step int, max time.Duration) time.Duration {
	return reconcile.Backoff{First: first, Factor: 10, Max: max}.Delay(int64(step) + 1)
}

// record updates the fights of res's object after the engine acted on it,
// and returns whether the object is contested (its reverts are not
// reported as ordinary drift) and the fights that ended.
func (g fightGuard) record(res engine.Result, hash string) (contested bool, ended []fightEnd) {
	g.t.mu.Lock()
	defer g.t.mu.Unlock()
	now := g.now()
	fights := g.t.of(g.ks)
	if res.Drift && res.Written {
		for _, m := range managersOf(res) {
			k := fightKey{res.ID, m}
			f := fights[k]
			if f == nil || !f.contested {
				f = &fight{fields: changedPaths(res)}
				fights[k] = f
			}
			contested = contested || f.contested
			f.hash, f.generation, f.lastRevert, f.heldUntil = hash, g.generation, now, time.Time{}
			f.reverts++
		}
		return contested, nil
	}
	for k, f := range fights {
		if k.id != res.ID {
			continue
		}
		switch {
		case res.Held || res.Err != nil:
			contested = contested || f.contested
		case res.Written:
			// Git changed the object: the fight goes on against the new
			// state, and ends when nobody rewrites it within the window.
			f.hash, f.generation, f.lastRevert, f.heldUntil = hash, g.generation, now, time.Time{}
			contested = contested || f.contested
		case !f.contested:
			if now.Sub(f.lastRevert) > g.opts.Window {
				delete(fights, k)
			}
		case !f.heldUntil.IsZero():
			delete(fights, k)
			ended = append(ended, fightEnd{k, f, "the drift is gone (an ignore rule, a Git change or the writer itself resolved it)"})
		case now.Sub(f.lastRevert) > g.opts.Window:
			delete(fights, k)
			ended = append(ended, fightEnd{k, f, fmt.Sprintf("%s did not write the fields again within %s of the last correction", k.manager, g.opts.Window)})
		default:
			contested = true
		}
	}
	return contested, ended
}

// due returns how long until a fight of the Kustomization needs a run: a
// held correction, or the end of the window after the last revert; zero
// when none does.
func (g fightGuard) due() time.Duration {
	g.t.mu.Lock()
	defer g.t.mu.Unlock()
	now := g.now()
	var next time.Duration
	for _, f := range g.t.of(g.ks) {
		if !f.contested {
			continue
		}
		at := f.heldUntil
		if at.IsZero() {
			at = f.lastRevert.Add(g.opts.Window + 10*time.Millisecond)
		}
		d := max(at.Sub(now), time.Millisecond)
		if next == 0 || d < next {
			next = d
		}
	}
	return next
}

// contests returns the Kustomization's fights, in object order, marking the
// ones not announced yet; started are the ones to announce now.
func (g fightGuard) contests() (all []kustomizev1.ContestedDrift, started []fightKey) {
	g.t.mu.Lock()
	defer g.t.mu.Unlock()
	fights := g.t.of(g.ks)
	keys := make([]fightKey, 0, len(fights))
	for k, f := range fights {
		if f.contested {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b fightKey) int {
		return strings.Compare(a.id.String()+"|"+a.manager, b.id.String()+"|"+b.manager)
	})
	for _, k := range keys {
		f := fights[k]
		if !f.announced {
			f.announced = true
			started = append(started, k)
		}
		all = append(all, contestedDrift(k, f))
	}
	return all, started
}

func contestedDrift(k fightKey, f *fight) kustomizev1.ContestedDrift {
	c := kustomizev1.ContestedDrift{Object: k.id.String(), Fields: f.fields, Manager: k.manager,
		Controller: f.controller, Reverts: f.reverts, Since: &metav1.Time{Time: f.since.Truncate(time.Second)}}
	if !f.heldUntil.IsZero() {
		c.NextRevert = &metav1.Time{Time: f.heldUntil.Truncate(time.Second)}
	}
	return c
}

// setController names the controller found to write a fight's fields.
func (g fightGuard) setController(k fightKey, controller string) {
	g.t.mu.Lock()
	defer g.t.mu.Unlock()
	if f := g.t.of(g.ks)[k]; f != nil {
		f.controller = controller
	}
}

// managersOf names the drift's foreign managers; a drift nobody owns
// (a removed field) is fought by "" (unknown).
func managersOf(res engine.Result) []string {
	if len(res.Managers) == 0 {
		return []string{""}
	}
	return res.Managers
}

func changedPaths(res engine.Result) []string {
	out := make([]string, 0, len(res.Changes))
	for _, c := range res.Changes {
		out = append(out, c.Path)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func overlaps(a, b []string) bool {
	for _, x := range a {
		if slices.Contains(b, x) {
			return true
		}
	}
	return false
}

func union(a, b []string) []string {
	out := append(slices.Clone(a), b...)
	slices.Sort(out)
	return slices.Compact(out)
}

// fights returns the run's fight guard, nil when fight detection is off or
// drift is only reported.
func (s *syncRun) fights() *fightGuard {
	if s.r.Fight.Window <= 0 || s.spec.DriftPolicy == kustomizev1.DriftPolicyReport {
		return nil
	}
	first := s.r.Fight.FirstBackoff
	if first <= 0 {
		first = 100 * time.Millisecond
	}
	return &fightGuard{t: &s.r.fightTracker, opts: FightOptions{Window: s.r.Fight.Window, FirstBackoff: first},
		ks: s.key, generation: s.obj.GetGeneration(), maxBackoff: max(s.spec.Interval, first), now: time.Now}
}

// recordFight updates the fights after the engine acted on an object and
// returns whether the object is contested.
func (s *syncRun) recordFight(res engine.Result) bool {
	if s.guard == nil {
		return false
	}
	contested, ended := s.guard.record(res, s.hashes[res.ID])
	s.fightsEnded = append(s.fightsEnded, ended...)
	return contested
}

// reportFights sets status.drift.contested and the DriftContested
// condition, and records one DriftContested event when a fight starts and
// one DriftContestEnded event when it ends — never one per revert.
func (s *syncRun) reportFights(ctx context.Context) {
	if s.guard == nil {
		conditions.Delete(s.out, kustomizev1.DriftContestedCondition)
		if s.st.Drift != nil {
			s.st.Drift.Contested = nil
		}
		return
	}
	all, started := s.guard.contests()
	for _, k := range started {
		if c := s.controllerOf(ctx, k); c != "" {
			s.guard.setController(k, c)
		}
	}
	if len(started) > 0 {
		all, _ = s.guard.contests()
	}
	for _, k := range started {
		for _, c := range all {
			if c.Object == k.id.String() && c.Manager == k.manager {
				s.r.Events.Record(s.obj, events.SeverityError, kustomizev1.DriftContestedReason, contestMessage(c, s.app.ignoreField()),
					events.WithRevision(s.revision), events.WithMetadata(map[string]string{
						"object": c.Object, "fields": strings.Join(c.Fields, ","), "manager": c.Manager, "controller": c.Controller}))
			}
		}
	}
	for _, e := range s.fightsEnded {
		if !e.f.announced {
			continue
		}
		c := contestedDrift(e.key, e.f)
		s.r.Events.Record(s.obj, events.SeverityInfo, kustomizev1.DriftContestEndedReason,
			fmt.Sprintf("%s: the fight over %s with field manager %s is over after %d correction(s): %s",
				c.Object, strings.Join(c.Fields, ", "), managerName(c.Manager), c.Reverts, e.why),
			events.WithRevision(s.revision), events.WithMetadata(map[string]string{
				"object": c.Object, "fields": strings.Join(c.Fields, ","), "manager": c.Manager, "reverts": strconv.Itoa(c.Reverts)}))
	}
	if len(all) == 0 {
		conditions.Delete(s.out, kustomizev1.DriftContestedCondition)
		if s.st.Drift != nil {
			s.st.Drift.Contested = nil
		}
		return
	}
	if s.st.Drift == nil {
		s.st.Drift = &kustomizev1.DriftStatus{}
	}
	s.st.Drift.Contested = all
	messages := make([]string, 0, len(all))
	for _, c := range all {
		messages = append(messages, contestMessage(c, s.app.ignoreField()))
	}
	conditions.MarkTrue(s.out, kustomizev1.DriftContestedCondition, kustomizev1.DriftContestedReason, "%s", strings.Join(messages, "; "))
}

func managerName(m string) string {
	if m == "" {
		return "(unknown: the fields were removed)"
	}
	return m
}

// contestMessage says who fights over what and how to end it; ignoreField
// names the ignore rules of the owner's kind (application.ignoreField).
func contestMessage(c kustomizev1.ContestedDrift, ignoreField string) string {
	var b strings.Builder
	fields := strings.Join(c.Fields, ", ")
	fmt.Fprintf(&b, "%s: %s rewritten by field manager %s after each correction", c.Object, fields, managerName(c.Manager))
	if c.Controller != "" {
		fmt.Fprintf(&b, " (%s scales this %s)", c.Controller, kindOf(c.Object))
	}
	fmt.Fprintf(&b, "; %d correction(s) so far, now backing off", c.Reverts)
	if c.NextRevert != nil {
		fmt.Fprintf(&b, " (next at %s)", c.NextRevert.UTC().Format(time.RFC3339))
	}
	b.WriteString(". To resolve: ")
	if c.Controller != "" {
		fmt.Fprintf(&b, "leave %s out of Git, or ", fields)
	} else {
		b.WriteString("stop the other writer, leave the fields out of Git, or ")
	}
	fmt.Fprintf(&b, "add %s {paths: [%s], target: {kind: %s, name: %s}}", ignoreField, strings.Join(pointers(c.Fields), ", "), kindOf(c.Object), nameOf(c.Object))
	return b.String()
}

func kindOf(object string) string { kind, _, _ := strings.Cut(object, "/"); return kind }

func nameOf(object string) string { return object[strings.LastIndex(object, "/")+1:] }

// pointers turns pkg/diff paths into the JSON pointers spec.ignore takes.
func pointers(paths []string) []string {
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		out = append(out, diff.PointerOf(p))
	}
	return out
}

// scaledKinds are the kinds a HorizontalPodAutoscaler commonly scales
// through spec.replicas.
var scaledKinds = map[string]bool{"Deployment": true, "StatefulSet": true, "ReplicaSet": true}

// controllerOf names a known controller that writes a fight's fields: a
// HorizontalPodAutoscaler whose scaleTargetRef is the object, when the
// fields include spec.replicas. One LIST of the namespace's autoscalers,
// uncached, when a fight starts — never on a resync.
func (s *syncRun) controllerOf(ctx context.Context, k fightKey) string {
	if k.id.Group != "apps" || !scaledKinds[k.id.Kind] {
		return ""
	}
	if !slices.Contains(s.guardFields(k), "spec.replicas") {
		return ""
	}
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion("autoscaling/v2")
	list.SetKind("HorizontalPodAutoscalerList")
	if err := s.r.reader().List(ctx, list, client.InNamespace(k.id.Namespace)); err != nil {
		log.FromContext(ctx).Error(err, "looking for the HorizontalPodAutoscaler of a contested object", "object", k.id.String())
		return ""
	}
	for _, hpa := range list.Items {
		kind, _, _ := unstructured.NestedString(hpa.Object, "spec", "scaleTargetRef", "kind")
		name, _, _ := unstructured.NestedString(hpa.Object, "spec", "scaleTargetRef", "name")
		if kind == k.id.Kind && name == k.id.Name {
			return "HorizontalPodAutoscaler/" + hpa.GetNamespace() + "/" + hpa.GetName()
		}
	}
	return ""
}

func (s *syncRun) guardFields(k fightKey) []string {
	s.guard.t.mu.Lock()
	defer s.guard.t.mu.Unlock()
	if f := s.guard.t.of(s.guard.ks)[k]; f != nil {
		return slices.Clone(f.fields)
	}
	return nil
}

// fightRequeue brings the next run forward to when a fight needs one.
func (s *syncRun) fightRequeue(result ctrl.Result) ctrl.Result {
	if s.guard == nil {
		return result
	}
	if d := s.guard.due(); d > 0 && (result.RequeueAfter == 0 || d < result.RequeueAfter) {
		result.RequeueAfter = d
	}
	return result
}

// driftGuard is the run's guard as the engine takes it: a nil interface
// when fight detection is off.
func (s *syncRun) driftGuard() engine.DriftGuard {
	if s.guard == nil {
		return nil
	}
	return *s.guard
}
