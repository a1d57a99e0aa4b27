package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"plumb.dev/e2e/bench/benchkit"
	"plumb.dev/pkg/benchfig"
)

// phase is what one phase of one side measured.
type phase struct {
	all, median time.Duration // until the last and the median release caught up
	delta       benchkit.Delta
	writes      int // the bench's own requests in the phase (creates or patches)
}

// perRelease is the API server's requests per release, the bench's own
// left out.
func (p phase) perRelease(n int) float64 {
	return (p.delta.ResourceRequests() - float64(p.writes)) / float64(n)
}

// sideFigures are what one side measured.
type sideFigures struct {
	side                    *side
	load                    string // load average before the side
	install, upgrade, noop  *phase
	drift                   []time.Duration
	driftEdits, driftMissed int
	hwm                     map[string]int64     // peak memory, KiB, at the end of the side
	mem                     *benchkit.MemSampler // Pss of each controller and its workers, through the side
	cpu                     map[string]time.Duration
}

// runSide runs the phases on one side: install, upgrade by a values
// change, a forced reconcile with nothing to change, and drift.
func (b *bench) runSide(ctx context.Context, s *side, source func(context.Context) (func(), error)) (*sideFigures, error) {
	n := b.c.n
	f := &sideFigures{side: s}
	names := []string{s.ns}
	for i := range n {
		names = append(names, s.targetNamespace(i))
	}
	say(">> %s: %d namespaces, the chart's source", s.name, len(names))
	if err := benchkit.EnsureNamespaces(ctx, b.fast, b.wc, names); err != nil {
		return nil, err
	}
	stop, err := source(ctx)
	if err != nil {
		return nil, err
	}
	defer stop()
	time.Sleep(2 * time.Second)
	f.load = benchfig.LoadAvg()
	first, err := b.meter.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	roots := map[string]func() int{}
	for _, c := range s.controllers {
		if pid := b.meter.Pid(c); pid != nil {
			roots[c] = pid
		}
	}
	f.mem = benchkit.NewMemSampler(roots, b.c.memEvery)
	f.mem.Start(ctx)
	defer f.mem.Stop()

	say(">> %s: install %d HelmReleases (load average %s)", s.name, n, f.load)
	f.install, err = b.phase(ctx, s, released, func(i int) error {
		return b.fast.Create(ctx, s.helmRelease(i, b.c.interval))
	})
	if err != nil {
		return f, fmt.Errorf("install: %w", err)
	}

	digests, err := b.configDigests(ctx, s)
	if err != nil {
		return f, err
	}
	say(">> %s: upgrade by a values change", s.name)
	values := fmt.Sprintf(`{"spec":{"values":{"message":%q}}}`, upgradeMessage)
	f.upgrade, err = b.phase(ctx, s, func(u *unstructured.Unstructured) bool {
		return released(u) && newest(u, "configDigest") != digests[u.GetName()]
	}, func(i int) error {
		return b.fast.Patch(ctx, s.ref(i), client.RawPatch(types.MergePatchType, []byte(values)))
	})
	if err != nil {
		return f, fmt.Errorf("upgrade: %w", err)
	}

	token := time.Now().UTC().Format(time.RFC3339Nano)
	say(">> %s: a reconcile of each, asked by %s, with nothing to change", s.name, s.requestAnnotation)
	request := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, s.requestAnnotation, token)
	f.noop, err = b.phase(ctx, s, func(u *unstructured.Unstructured) bool {
		handled, _, _ := unstructured.NestedString(u.Object, "status", "lastHandledReconcileAt")
		return handled == token && released(u)
	}, func(i int) error {
		return b.fast.Patch(ctx, s.ref(i), client.RawPatch(types.MergePatchType, []byte(request)))
	})
	if err != nil {
		return f, fmt.Errorf("no-op reconcile: %w", err)
	}

	if b.c.driftEdits > 0 {
		f.driftEdits = min(b.c.driftEdits, n)
		say(">> %s: %d Deployments scaled to %d by hand; waiting up to %s for each to be reverted", s.name, f.driftEdits, driftReplicas, b.c.driftTimeout)
		if f.drift, f.driftMissed, err = b.drift(ctx, s, f.driftEdits); err != nil {
			return f, fmt.Errorf("drift: %w", err)
		}
	}
	f.mem.Stop()
	last, err := b.meter.Snapshot(ctx)
	if err != nil {
		return f, err
	}
	whole := benchkit.Diff(first, last)
	f.hwm, f.cpu = whole.HWM, whole.CPU
	return f, nil
}

// ref is the i-th HelmRelease of the side, by name, for a patch.
func (s *side) ref(i int) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(s.gvk)
	u.SetNamespace(s.ns)
	u.SetName(appName(i))
	return u
}

// phase writes to every HelmRelease (write(i), -create-workers at a time)
// and times until each met done, from the first write; it counts the
// requests from just before the writes until a second after the last
// caught up.
func (b *bench) phase(ctx context.Context, s *side, done func(*unstructured.Unstructured) bool, write func(i int) error) (*phase, error) {
	n := b.c.n
	t, err := b.track(ctx, s, done)
	if err != nil {
		return nil, err
	}
	defer t.stop()
	before, err := b.meter.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	if err := benchkit.ForEach(ctx, n, b.c.createWorkers, write); err != nil {
		return nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, b.c.readyTimeout)
	times, err := t.wait(wctx, n, start, func(have int) {
		say("   %d of %d after %s", have, n, benchfig.Round(time.Since(start)))
	})
	cancel()
	if err != nil {
		return nil, err
	}
	time.Sleep(settle)
	after, err := b.meter.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	p := &phase{all: times[len(times)-1], median: times[(len(times)-1)/2], delta: benchkit.Diff(before, after), writes: n}
	say("   all %d after %s (median %s); %.1f API requests per release", n, benchfig.Round(p.all), benchfig.Round(p.median), p.perRelease(n))
	return p, nil
}

// configDigests are the config digests of each HelmRelease's newest
// release: the upgrade waits for a new one.
func (b *bench) configDigests(ctx context.Context, s *side) (map[string]string, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(s.gvk.GroupVersion().WithKind(s.gvk.Kind + "List"))
	if err := b.wc.List(ctx, list, client.InNamespace(s.ns)); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for i := range list.Items {
		out[list.Items[i].GetName()] = newest(&list.Items[i], "configDigest")
	}
	return out, nil
}

// drift scales edits Deployments of the side (spread over its releases)
// to driftReplicas by hand, all at once, as the field manager
// bench-intruder, and times each from its patch returning until a watch
// of the Deployments delivers the chart's replicas again after having
// delivered the edit. An edit not reverted within -drift-timeout is
// missed.
func (b *bench) drift(ctx context.Context, s *side, edits int) ([]time.Duration, int, error) {
	var followers benchfig.Followers
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion("apps/v1")
	list.SetKind("DeploymentList")
	if err := b.wc.List(wctx, list, client.MatchingLabels{"app.kubernetes.io/name": "web"}); err != nil {
		return nil, 0, err
	}
	open := func(rv string) (watch.Interface, error) {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(list.GroupVersionKind())
		return b.wc.Watch(wctx, l, client.MatchingLabels{"app.kubernetes.io/name": "web"},
			&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true}})
	}
	go func() {
		_ = benchkit.Follow(wctx, list.GetResourceVersion(), open, func(ev watch.Event) {
			u, ok := ev.Object.(*unstructured.Unstructured)
			if !ok || ev.Type == watch.Bookmark {
				return
			}
			r, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
			followers.Deliver(u.GetNamespace()+"/"+u.GetName(), benchfig.Observation{ResourceVersion: u.GetResourceVersion(), Value: strconv.FormatInt(r, 10), At: time.Now()})
		})
	}()
	type result struct {
		d   time.Duration
		err error
	}
	results := make(chan result, edits)
	patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"replicas": driftReplicas}})
	for e := range edits {
		i := e * b.c.n / edits
		ns, name := s.targetNamespace(i), appName(i)+"-web"
		key := ns + "/" + name
		seen := followers.Follow(key)
		go func() {
			defer followers.Unfollow(key)
			d := &unstructured.Unstructured{}
			d.SetAPIVersion("apps/v1")
			d.SetKind("Deployment")
			d.SetNamespace(ns)
			d.SetName(name)
			if err := b.fast.Patch(ctx, d, client.RawPatch(types.MergePatchType, patch), client.FieldOwner("bench-intruder")); err != nil {
				results <- result{err: fmt.Errorf("scaling %s: %w", key, err)}
				return
			}
			from := time.Now()
			took, err := benchfig.AwaitRevert(ctx, seen, d.GetResourceVersion(), strconv.Itoa(replicas), from, b.c.driftTimeout)
			results <- result{d: took, err: err}
		}()
	}
	var times []time.Duration
	missed := 0
	for range edits {
		r := <-results
		switch {
		case r.err != nil && ctx.Err() != nil:
			return nil, 0, ctx.Err()
		case r.err != nil:
			say("   %v", r.err)
			missed++
		default:
			times = append(times, r.d)
		}
	}
	say("   drift: p50 %s, max %s, %d missed", benchfig.Round(benchfig.Percentile(times, 50)), benchfig.Round(benchfig.Percentile(times, 100)), missed)
	return times, missed, nil
}

// floorFigures are the bare server-side-apply loop over the objects one
// side's install creates.
type floorFigures struct {
	took  time.Duration
	delta benchkit.Delta
	load  string
}

// runFloor applies the chart's three objects of every release with no
// controller and no Helm: each release's objects into a namespace of its
// own, -bare-workers at a time, force, one field manager. It waits for
// nothing (no Deployment's rollout): what any implementation must at
// least send the API server.
func (b *bench) runFloor(ctx context.Context) (*floorFigures, error) {
	n := b.c.n
	var names []string
	var objs []*unstructured.Unstructured
	for i := range n {
		ns := fmt.Sprintf("floor-%04d", i)
		names = append(names, ns)
		objs = append(objs, floorObjects(ns, appName(i))...)
	}
	say(">> the floor: %d objects by a bare server-side-apply loop, %d workers", len(objs), b.c.bareWorkers)
	if err := benchkit.EnsureNamespaces(ctx, b.fast, b.wc, names); err != nil {
		return nil, err
	}
	time.Sleep(2 * time.Second)
	f := &floorFigures{load: benchfig.LoadAvg()}
	before, err := b.meter.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	if err := benchkit.ApplyAll(ctx, b.fast, objs, b.c.bareWorkers); err != nil {
		return nil, err
	}
	f.took = time.Since(start)
	after, err := b.meter.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	f.delta = benchkit.Diff(before, after)
	say("   the floor: %s, %.1f API requests per release", benchfig.Round(f.took), f.delta.ResourceRequests()/float64(n))
	return f, nil
}
