package fight

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/object"
	"plumb.dev/pkg/reconcile"
	"plumb.dev/sync-controller/internal/engine"
)

// key is one object and one foreign field manager.
type key struct {
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

// Tracker remembers corrections per Kustomization (or HelmRelease), object
// and foreign field manager. It lives as long as the process: a restart
// forgets every fight, and the first repeat after it starts the fight over.
// The zero Tracker is ready to use.
type Tracker struct {
	mu sync.Mutex
	m  map[types.NamespacedName]map[key]*fight
}

// ended is a fight that is over, and why.
type ended struct {
	key key
	f   *fight
	why string
}

func (t *Tracker) of(owner types.NamespacedName) map[key]*fight {
	if t.m == nil {
		t.m = map[types.NamespacedName]map[key]*fight{}
	}
	m := t.m[owner]
	if m == nil {
		m = map[key]*fight{}
		t.m[owner] = m
	}
	return m
}

// Forget drops the fights of an owner that was deleted.
func (t *Tracker) Forget(owner types.NamespacedName) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.m, owner)
}

// guard is the engine.DriftGuard of one run of one owner.
type guard struct {
	t          *Tracker
	opts       Options
	owner      types.NamespacedName
	generation int64
	maxBackoff time.Duration
	now        func() time.Time
}

// Wait holds back the check of an object whose contested correction is not
// due yet, as long as neither Git (the hash) nor the Kustomization (its
// generation: an ignore rule) changed.
func (g guard) Wait(id object.ID, hash string) bool {
	g.t.mu.Lock()
	defer g.t.mu.Unlock()
	now := g.now()
	for k, f := range g.t.of(g.owner) {
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
func (g guard) Revert(res engine.Result) bool {
	g.t.mu.Lock()
	defer g.t.mu.Unlock()
	now := g.now()
	fields := changedPaths(res)
	revert := true
	for _, m := range managersOf(res) {
		f := g.t.of(g.owner)[key{res.ID, m}]
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
func (g guard) record(res engine.Result, hash string) (contested bool, over []ended) {
	g.t.mu.Lock()
	defer g.t.mu.Unlock()
	now := g.now()
	fights := g.t.of(g.owner)
	if res.Drift && res.Written {
		for _, m := range managersOf(res) {
			k := key{res.ID, m}
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
			over = append(over, ended{k, f, "the drift is gone (an ignore rule, a Git change or the writer itself resolved it)"})
		case now.Sub(f.lastRevert) > g.opts.Window:
			delete(fights, k)
			over = append(over, ended{k, f, fmt.Sprintf("%s did not write the fields again within %s of the last correction", k.manager, g.opts.Window)})
		default:
			contested = true
		}
	}
	return contested, over
}

// due returns how long until a fight of the owner needs a run: a held
// correction, or the end of the window after the last revert; zero when
// none does.
func (g guard) due() time.Duration {
	g.t.mu.Lock()
	defer g.t.mu.Unlock()
	now := g.now()
	var next time.Duration
	for _, f := range g.t.of(g.owner) {
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

// contests returns the owner's fights, in object order, marking the ones
// not announced yet; started are the ones to announce now.
func (g guard) contests() (all []kustomizev1.ContestedDrift, started []key) {
	g.t.mu.Lock()
	defer g.t.mu.Unlock()
	fights := g.t.of(g.owner)
	keys := make([]key, 0, len(fights))
	for k, f := range fights {
		if f.contested {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b key) int {
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

func contestedDrift(k key, f *fight) kustomizev1.ContestedDrift {
	c := kustomizev1.ContestedDrift{Object: k.id.String(), Fields: f.fields, Manager: k.manager,
		Controller: f.controller, Reverts: f.reverts, Since: &metav1.Time{Time: f.since.Truncate(time.Second)}}
	if !f.heldUntil.IsZero() {
		c.NextRevert = &metav1.Time{Time: f.heldUntil.Truncate(time.Second)}
	}
	return c
}

// setController names the controller found to write a fight's fields.
func (g guard) setController(k key, controller string) {
	g.t.mu.Lock()
	defer g.t.mu.Unlock()
	if f := g.t.of(g.owner)[k]; f != nil {
		f.controller = controller
	}
}

// fields returns the fields a fight is over.
func (g guard) fields(k key) []string {
	g.t.mu.Lock()
	defer g.t.mu.Unlock()
	if f := g.t.of(g.owner)[k]; f != nil {
		return slices.Clone(f.fields)
	}
	return nil
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
