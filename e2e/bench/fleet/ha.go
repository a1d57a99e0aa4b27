package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"math"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/e2e/bench/benchkit"
	"plumb.dev/e2e/localenv"
	"plumb.dev/pkg/benchfig"
)

// How -ha ends sync-controller's leader.
const (
	signalKill = "kill"
	signalTerm = "term"
)

// haStandbys are the controllers -ha runs as a leader and a standby.
var haStandbys = []string{localenv.RenderController, localenv.SyncController}

// leasePoll is how often -ha reads the Lease after the kill: the
// resolution of the takeover time.
const leasePoll = 50 * time.Millisecond

// lateWrites is how long after all are Ready the objects are still
// watched: a second apply lands just after the status that says Ready.
const lateWrites = 5 * time.Second

// haFigures are the figures of one takeover.
type haFigures struct {
	n            int
	signal       string
	readyAtKill  int
	killedInHook string // the app whose hook had just been created at the kill
	// hookReadyBeforeKill is when that app was Ready, if before the kill.
	hookReadyBeforeKill time.Time
	killed, leader      string // the killed process; the one that took over
	transitions         int32  // the Lease's leaseTransitions after the run
	toLease             time.Duration
	toResume            time.Duration // until the first Ready after the takeover
	readyInBetween      int           // Ready seen between the kill and the takeover
	toAll               time.Duration
	allReady            time.Duration // from the first create
	kustomizations      int           // Ready with the 4 entries in their inventory
	objects             int           // of the 4·N, present at the end
	rewritten           []string      // objects written again after their creation
	rewrittenLate       int           // of which after the kill
	hooks               int           // hooks expected
	hooksCreated        int           // creations seen, all hooks together
	hooksRerun          []string      // hooks created more than once
	// inFlight are the Kustomizations the killed leader had begun (an
	// object written) and the new one finished (Ready after the kill);
	// hooksInFlight the hooks among them created before the kill.
	inFlight, hooksInFlight int
	load                    string
}

func runHA(ctx context.Context, c config, res *results) error {
	for _, n := range c.ns {
		err := withEnv(ctx, c, envOptions{standbys: haStandbys}, func(b *bench) error {
			h, err := b.runTakeover(ctx, n)
			if err != nil {
				return fmt.Errorf("takeover at N=%d: %w", n, err)
			}
			res.ha = append(res.ha, h)
			return nil
		})
		if err != nil {
			return res.finish(err)
		}
	}
	return res.finish(nil)
}

// runTakeover syncs a fleet of n with render- and sync-controller as
// leader and standby, ends sync-controller's leader once -ha-kill-after
// of the Kustomizations are Ready, and measures the takeover and what
// it left: objects written twice, objects or inventory entries lost,
// hooks run again.
func (b *bench) runTakeover(ctx context.Context, n int) (*haFigures, error) {
	h := &haFigures{n: n, signal: b.c.haSignal}
	b.hookEvery = b.c.hookEvery
	if err := b.prepare(ctx, n); err != nil {
		return nil, err
	}
	// Watched from before the fleet: every write of the apps' objects.
	ow, err := b.watchWrites(ctx)
	if err != nil {
		return nil, err
	}
	defer ow.stop()
	rw, err := b.watchReady(ctx)
	if err != nil {
		return nil, err
	}
	defer rw.stop()

	start := time.Now()
	if err := b.createFleet(ctx, n, nil); err != nil {
		return nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, b.c.readyTimeout)
	defer cancel()
	at := int(math.Ceil(float64(n) * b.c.haKillAfter))
	if _, err := rw.waitAll(wctx, at, func(have int) { say("   %d of %d Ready after %s", have, n, benchfig.Round(time.Since(start))) }); err != nil {
		return nil, err
	}

	// The kill comes right after a hook's creation, when there are
	// hooks: that Kustomization's sync is in its PostSync phase, the
	// case where a takeover could run a hook twice.
	if b.hookEvery > 0 {
		select {
		case <-ow.hookCreated: // an old one, perhaps
		default:
		}
		select {
		case h.killedInHook = <-ow.hookCreated:
		case <-time.After(30 * time.Second):
			say("   no hook created in 30s: killing without one")
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	// The leader, by its own word; the Lease names it only by a random id.
	leader, err := b.env.Leader(ctx, localenv.SyncController)
	if err != nil || leader == nil {
		return nil, fmt.Errorf("no leader of sync-controller to kill (%v)", err)
	}
	lease, err := b.env.Lease(ctx, localenv.SyncController)
	if err != nil {
		return nil, err
	}
	holder := ptrValue(lease.Spec.HolderIdentity)
	rw.mu.Lock()
	h.readyAtKill = len(rw.readyAt)
	rw.mu.Unlock()
	h.killed = leader.Name
	say(">> N=%d: %d Ready; ending the leader %s (pid %d, %s) with %s", n, h.readyAtKill, leader.Name, leader.Pid(), holder, b.c.haSignal)
	killed := time.Now()
	if b.c.haSignal == signalKill {
		err = leader.Kill()
	} else {
		err = leader.Stop(30 * time.Second)
	}
	if err != nil {
		return nil, err
	}

	// The takeover: another identity in the Lease.
	var tookOver time.Time
	for tookOver.IsZero() {
		l, err := b.env.Lease(ctx, localenv.SyncController)
		if err != nil {
			return nil, err
		}
		if id := ptrValue(l.Spec.HolderIdentity); id != "" && id != holder {
			tookOver = time.Now()
			h.transitions = ptrValue(l.Spec.LeaseTransitions)
			break
		}
		if time.Since(killed) > 5*time.Minute {
			return nil, fmt.Errorf("the Lease still names %q 5 minutes after the kill", holder)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(leasePoll):
		}
	}
	h.toLease = tookOver.Sub(killed)
	if next, err := b.env.WaitLeader(ctx, localenv.SyncController); err == nil {
		h.leader = next.Name
	}
	say("   the Lease changed hands after %s, to %s", benchfig.Round(h.toLease), h.leader)

	readyAt, err := rw.waitAll(wctx, n, func(have int) { say("   %d of %d Ready after %s", have, n, benchfig.Round(time.Since(start))) })
	if err != nil {
		b.describeNotReady(ctx, rw)
		return nil, err
	}
	h.allReady = readyAt[len(readyAt)-1].Sub(start)
	h.toAll = readyAt[len(readyAt)-1].Sub(killed)
	for _, t := range readyAt {
		switch {
		case t.After(killed) && t.Before(tookOver):
			h.readyInBetween++
		case !t.Before(tookOver) && h.toResume == 0:
			h.toResume = t.Sub(killed)
		}
	}
	say("   all %d Ready after %s, %s after the kill", n, benchfig.Round(h.allReady), benchfig.Round(h.toAll))
	time.Sleep(lateWrites)
	if h.transitions == 0 {
		if l, err := b.env.Lease(ctx, localenv.SyncController); err == nil {
			h.transitions = ptrValue(l.Spec.LeaseTransitions)
		}
	}

	// Nothing lost: every Kustomization with its four entries, every
	// object there; nothing done twice: no object written again after its
	// creation, no hook created twice.
	var list kustomizev1.KustomizationList
	if err := b.wc.List(ctx, &list, client.InNamespace(fleetNamespace)); err != nil {
		return nil, err
	}
	for i := range list.Items {
		if fleetReady(&list.Items[i]) {
			h.kustomizations++
		}
	}
	rw.mu.Lock()
	readyOf := maps.Clone(rw.readyAt)
	rw.mu.Unlock()
	if t := readyOf[h.killedInHook]; h.killedInHook != "" && t.Before(killed) {
		h.hookReadyBeforeKill = t
	}
	ow.mu.Lock()
	defer ow.mu.Unlock()
	for i := range n {
		ns := appName(i)
		finishedByTheNext := readyOf[ns].After(killed)
		begun := false
		for _, o := range appObjects(ns, "") {
			key := writeKey(o.GetKind(), ns, o.GetName())
			ws := ow.writes[key]
			if len(ws) > 0 && ws[0].at.Before(killed) {
				begun = true
			}
			if len(ws) > 0 && ws[len(ws)-1].typ != watch.Deleted {
				h.objects++
			}
			if len(ws) > 1 {
				again := ws[1:]
				h.rewritten = append(h.rewritten, fmt.Sprintf("%s: %d more writes, the last by %s", key, len(again), again[len(again)-1].manager))
				if again[len(again)-1].at.After(killed) {
					h.rewrittenLate++
				}
			}
		}
		if begun && finishedByTheNext {
			h.inFlight++
		}
		if hasHook(i, b.hookEvery) {
			h.hooks++
			created := 0
			for _, w := range ow.writes[writeKey(hookKind, ns, hookName)] {
				if w.typ == watch.Added {
					created++
				}
			}
			h.hooksCreated += created
			if hw := ow.writes[writeKey(hookKind, ns, hookName)]; finishedByTheNext && len(hw) > 0 && hw[0].at.Before(killed) {
				h.hooksInFlight++
			}
			if created != 1 {
				h.hooksRerun = append(h.hooksRerun, fmt.Sprintf("%s/%s/%s created %d times", hookKind, ns, hookName, created))
			}
		}
	}
	sort.Strings(h.rewritten)
	h.load = benchfig.LoadAvg()
	return h, nil
}

func ptrValue[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// write is one watch event of an app's object.
type write struct {
	at      time.Time
	typ     watch.EventType
	manager string // the field manager of the newest managedFields entry
}

func writeKey(kind, ns, name string) string { return kind + "/" + ns + "/" + name }

// writeWatch follows the metadata of the kinds of the apps' objects in
// every namespace and keeps each write of an app's object: an apply with
// nothing new is a no-op at the API server and no event, so an object
// applied once and left alone has one event, its creation.
type writeWatch struct {
	mu     sync.Mutex
	writes map[string][]write
	// hookCreated receives the namespace of each hook created, when
	// there is room: the moment a sync is in its last phase.
	hookCreated chan string
	stop        context.CancelFunc
}

// writeKinds are the apps' kinds (appObjects, hookObject).
var writeKinds = []schema.GroupVersionKind{
	{Version: "v1", Kind: "ConfigMap"}, {Version: "v1", Kind: "Secret"}, {Version: "v1", Kind: "Service"},
	{Version: "v1", Kind: "ServiceAccount"}, {Group: "batch", Version: "v1", Kind: hookKind},
}

func (b *bench) watchWrites(ctx context.Context) (*writeWatch, error) {
	ctx, cancel := context.WithCancel(ctx)
	ww := &writeWatch{writes: map[string][]write{}, hookCreated: make(chan string, 1), stop: cancel}
	for _, gvk := range writeKinds {
		kind := gvk.Kind
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(kind + "List"))
		if err := b.wc.List(ctx, list, client.Limit(1)); err != nil {
			cancel()
			return nil, fmt.Errorf("listing %ss: %w", kind, err)
		}
		open := func(rv string) (watch.Interface, error) {
			l := &metav1.PartialObjectMetadataList{}
			l.SetGroupVersionKind(list.GroupVersionKind())
			return b.wc.Watch(ctx, l, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true}})
		}
		go func() {
			err := benchkit.Follow(ctx, list.ResourceVersion, open, func(ev watch.Event) {
				m, ok := ev.Object.(*metav1.PartialObjectMetadata)
				if !ok || ev.Type == watch.Bookmark || !strings.HasPrefix(m.Namespace, "app-") {
					return
				}
				ww.mu.Lock()
				key := writeKey(kind, m.Namespace, m.Name)
				ww.writes[key] = append(ww.writes[key], write{at: time.Now(), typ: ev.Type, manager: newestManager(m.ManagedFields)})
				ww.mu.Unlock()
				if kind == hookKind && m.Name == hookName && ev.Type == watch.Added {
					select {
					case ww.hookCreated <- m.Namespace:
					default:
					}
				}
			})
			if err != nil {
				say("   watching %ss again: %v", kind, err)
			}
		}()
	}
	return ww, nil
}

// newestManager names the field manager whose managedFields entry is the
// newest: the writer of the event, give or take a write within the
// entries' one-second resolution.
func newestManager(entries []metav1.ManagedFieldsEntry) string {
	name, newest := "?", time.Time{}
	for _, e := range entries {
		if e.Time != nil && !e.Time.Time.Before(newest) {
			name, newest = e.Manager+" ("+string(e.Operation)+")", e.Time.Time
		}
	}
	return name
}

// printHA prints the takeover figures, one column per N.
func (r *results) printHA(out io.Writer) {
	hs := r.ha
	fmt.Fprintf(out, "takeover: render- and sync-controller each a leader and a standby (Lease %s, renew %s, retry %s); sync-controller's leader ended with %s once %.0f%% of the Kustomizations were Ready\n",
		r.c.lease.LeaseDuration, r.c.lease.RenewDeadline, r.c.lease.RetryPeriod, strings.ToUpper("SIG"+r.c.haSignal), 100*r.c.haKillAfter)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	header := []string{"figure"}
	for _, h := range hs {
		header = append(header, fmt.Sprintf("N=%d", h.n))
	}
	header = append(header, "target")
	writeHeader(tw, header)
	row := func(name, target string, cell func(h *haFigures) string) {
		cells := []string{name}
		for _, h := range hs {
			cells = append(cells, cell(h))
		}
		fmt.Fprintln(tw, strings.Join(append(cells, target), "\t"))
	}
	secs := func(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }
	row("Ready when the leader was ended", "", func(h *haFigures) string { return fmt.Sprintf("%d of %d", h.readyAtKill, h.n) })
	row("killed right after the hook of", "", func(h *haFigures) string {
		if h.killedInHook == "" {
			return "—"
		}
		ready := "not yet Ready then"
		if !h.hookReadyBeforeKill.IsZero() {
			ready = "Ready already"
		}
		return h.killedInHook + " (" + ready + ")"
	})
	row("ended / took over", "", func(h *haFigures) string {
		if h.leader == h.killed {
			return h.killed + " / the same, restarted"
		}
		return h.killed + " / " + h.leader
	})
	// A standby tries every RetryPeriod with client-go's jitter (up to
	// 1.2 × more), and the Lease stays the dead leader's for up to
	// LeaseDuration after its last renewal.
	bound := r.c.lease.LeaseDuration + r.c.lease.RetryPeriod*22/10
	row("kill → another process holds the Lease", fmt.Sprintf("≤ %s (lease + 2.2 × retry)", bound), func(h *haFigures) string { return secs(h.toLease) })
	row("  Ready seen in between (written before the kill)", "", func(h *haFigures) string { return fmt.Sprint(h.readyInBetween) })
	row("kill → first Ready after the takeover (resumed)", "", func(h *haFigures) string { return secs(h.toResume) })
	row("kill → all Ready", "", func(h *haFigures) string { return secs(h.toAll) })
	row("all Ready (from the first create)", "", func(h *haFigures) string { return secs(h.allReady) })
	row("Lease transitions", "", func(h *haFigures) string { return fmt.Sprint(h.transitions) })
	row("Kustomizations begun by the killed leader, finished by the next", "", func(h *haFigures) string {
		return fmt.Sprintf("%d (%d with a hook created before the kill)", h.inFlight, h.hooksInFlight)
	})
	row("Kustomizations Ready with 4 inventory entries", "all", func(h *haFigures) string { return fmt.Sprintf("%d of %d", h.kustomizations, h.n) })
	row("objects present", "all", func(h *haFigures) string { return fmt.Sprintf("%d of %d", h.objects, 4*h.n) })
	row("objects written again after their creation", "none", func(h *haFigures) string {
		return fmt.Sprintf("%d (%d after the kill)", len(h.rewritten), h.rewrittenLate)
	})
	row("hooks created (each must be once)", "one each", func(h *haFigures) string {
		return fmt.Sprintf("%d for %d hooks, %d more than once", h.hooksCreated, h.hooks, len(h.hooksRerun))
	})
	tw.Flush()
	for _, h := range hs {
		for i, s := range h.rewritten {
			if i == 5 {
				fmt.Fprintf(out, "N=%d: … and %d more written again\n", h.n, len(h.rewritten)-5)
				break
			}
			fmt.Fprintf(out, "N=%d: written again: %s\n", h.n, s)
		}
		for _, s := range h.hooksRerun {
			fmt.Fprintf(out, "N=%d: hook: %s\n", h.n, s)
		}
		fmt.Fprintf(out, "N=%d: load average after: %s\n", h.n, h.load)
	}
	fmt.Fprintln(out)
}
