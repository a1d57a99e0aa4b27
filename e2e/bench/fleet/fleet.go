package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/e2e/bench/benchkit"
	"plumb.dev/pkg/benchfig"
)

// fleetNamespace holds the GitRepositories and the Kustomizations; each
// Kustomization's objects live in a namespace of their own.
const fleetNamespace = "fleet"

// fleetFigures are the figures of one N.
type fleetFigures struct {
	n         int
	bare      time.Duration  // the bare loop over the same 4·N objects
	bareReqs  float64        // its requests as the API server counted them
	bareDelta benchkit.Delta // the bare loop's snapshots
	// floor and floorDelta: the floor (floor.go), after the rest.
	floor      time.Duration
	floorDelta benchkit.Delta
	allReady   time.Duration
	median     time.Duration
	// allRendered and medianRendered: when render-controller's artifact
	// was in the status, of the last and the median Kustomization.
	allRendered, medianRendered time.Duration
	sync                        benchkit.Delta // from the first create until all Ready, plus settle
	rest                        benchkit.Delta // at rest afterwards
	drift                       []time.Duration
	driftEdits                  int
	driftMiss                   int
	load                        string
	// shards is how many shards the fleet was labelled over (1: none),
	// and readyAt when each Kustomization was first Ready, from the
	// first create: the figures per shard.
	shards  int
	readyAt map[string]time.Duration
	// tail is where the last Kustomizations' time went (tail.go).
	tail *tailFigures
}

// shardOf is the shard the i-th Kustomization or GitRepository is
// labelled with, round-robin over shards ("" when there is one).
func shardOf(i, shards int) string {
	if shards <= 1 {
		return ""
	}
	return fmt.Sprintf("shard%d", i%shards+1)
}

// shardLabels are the labels that put the i-th object in its shard.
func shardLabels(i, shards int) map[string]string {
	if shards <= 1 {
		return nil
	}
	return map[string]string{meta.ShardKeyLabel: shardOf(i, shards)}
}

// ensureNamespaces is benchkit.EnsureNamespaces with the bench's clients.
func (b *bench) ensureNamespaces(ctx context.Context, names []string) error {
	return benchkit.EnsureNamespaces(ctx, b.fast, b.wc, names)
}

// createSources creates the shared GitRepositories and waits until each
// has an artifact: the Kustomizations start from ready-made sources.
func (b *bench) createSources(ctx context.Context, names []string, interval time.Duration) error {
	for r, name := range names {
		repo := &sourcev1.GitRepository{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: fleetNamespace, Labels: shardLabels(r, b.shards)},
			Spec: sourcev1.GitRepositorySpec{
				URL:       b.env.Git.URL(name),
				Reference: &sourcev1.GitRepositoryRef{Branch: "main"},
				Interval:  metav1.Duration{Duration: interval},
			},
		}
		if err := b.wc.Create(ctx, repo); err != nil {
			return fmt.Errorf("GitRepository %s: %w", name, err)
		}
	}
	deadline := time.Now().Add(3 * time.Minute)
	for _, name := range names {
		for {
			repo := &sourcev1.GitRepository{}
			if err := b.wc.Get(ctx, types.NamespacedName{Namespace: fleetNamespace, Name: name}, repo); err != nil {
				return err
			}
			if repo.Status.Artifact != nil && conditions.IsReady(repo) {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("GitRepository %s has no artifact after 3m: %v", name, repo.Status.Conditions)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	return nil
}

// newFleetKustomization is the i-th Kustomization of the fleet.
func (b *bench) newFleetKustomization(i int) *kustomizev1.Kustomization {
	ks := &kustomizev1.Kustomization{
		ObjectMeta: metav1.ObjectMeta{Name: appName(i), Namespace: fleetNamespace, Labels: shardLabels(i, b.shards)},
		Spec: kustomizev1.KustomizationSpec{
			SourceRef:     kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: repoName(i % b.c.repos)},
			Path:          pathOf(b.c.layout, i, b.hookEvery),
			Interval:      metav1.Duration{Duration: b.c.ksInterval},
			RetryInterval: &metav1.Duration{Duration: time.Minute},
			Timeout:       &metav1.Duration{Duration: 2 * time.Minute},
			Prune:         true,
		},
	}
	if b.c.layout == layoutSubstitute {
		ks.Spec.PostBuild = &kustomizev1.PostBuild{Substitute: map[string]string{"app": appName(i)}}
	}
	return ks
}

// fleetReady reports whether a Kustomization has applied its revision at
// its current generation, with the four objects in its inventory.
func fleetReady(k *kustomizev1.Kustomization) bool {
	return k.Status.ObservedGeneration == k.Generation && conditions.IsReady(k) &&
		k.Status.LastAppliedRevision != "" && k.Status.Inventory != nil && len(k.Status.Inventory.Entries) == 4
}

// readyWatch follows the fleet's Kustomizations and notes when each was
// first seen Ready. A watch the server ends is opened again from the
// last resourceVersion seen.
type readyWatch struct {
	mu      sync.Mutex
	readyAt map[string]time.Time
	// renderedAt is when render-controller's artifact was first seen
	// in the status: the render half of the way to Ready.
	renderedAt map[string]time.Time
	changed    chan struct{}
	err        error
	// stop ends the watch.
	stop context.CancelFunc
}

func (b *bench) watchReady(ctx context.Context) (*readyWatch, error) {
	ctx, cancel := context.WithCancel(ctx)
	rw := &readyWatch{readyAt: map[string]time.Time{}, renderedAt: map[string]time.Time{}, changed: make(chan struct{}, 1), stop: cancel}
	var list kustomizev1.KustomizationList
	if err := b.wc.List(ctx, &list, client.InNamespace(fleetNamespace)); err != nil {
		cancel()
		return nil, err
	}
	open := func(rv string) (watch.Interface, error) {
		return b.wc.Watch(ctx, &kustomizev1.KustomizationList{}, client.InNamespace(fleetNamespace),
			&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true}})
	}
	go func() {
		err := benchkit.Follow(ctx, list.ResourceVersion, open, func(ev watch.Event) {
			at := time.Now()
			k, ok := ev.Object.(*kustomizev1.Kustomization)
			if !ok || ev.Type == watch.Bookmark || !strings.HasPrefix(k.Name, "app-") {
				return
			}
			rw.mu.Lock()
			if _, seen := rw.renderedAt[k.Name]; !seen && k.Status.RenderedArtifact != nil {
				rw.renderedAt[k.Name] = at
			}
			_, seen := rw.readyAt[k.Name]
			ready := !seen && fleetReady(k)
			if ready {
				rw.readyAt[k.Name] = at
			}
			rw.mu.Unlock()
			if !ready {
				return
			}
			select {
			case rw.changed <- struct{}{}:
			default:
			}
		})
		if err != nil {
			rw.mu.Lock()
			rw.err = err
			rw.mu.Unlock()
		}
	}()
	return rw, nil
}

// waitAll waits until n Kustomizations were seen Ready and returns their
// Ready times.
func (rw *readyWatch) waitAll(ctx context.Context, n int, progress func(int)) ([]time.Time, error) {
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	for {
		rw.mu.Lock()
		have, err := len(rw.readyAt), rw.err
		rw.mu.Unlock()
		if err != nil {
			return nil, err
		}
		if have >= n {
			rw.mu.Lock()
			defer rw.mu.Unlock()
			return sortedTimes(rw.readyAt), nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%d of %d Kustomizations Ready: %w", have, n, ctx.Err())
		case <-tick.C:
			progress(have)
		case <-rw.changed:
		}
	}
}

func sortedTimes(m map[string]time.Time) []time.Time {
	var out []time.Time
	for _, at := range m {
		out = append(out, at)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Before(out[j]) })
	return out
}

// prepare makes what the fleet of n needs before the clock starts: the
// namespaces, the repositories (with b.hookEvery's hooks) and the
// GitRepositories, each with its artifact.
func (b *bench) prepare(ctx context.Context, n int) error {
	names := []string{fleetNamespace}
	for i := range n {
		names = append(names, appName(i))
	}
	say(">> N=%d: creating %d namespaces", n, n+1)
	if err := b.ensureNamespaces(ctx, names); err != nil {
		return err
	}
	hooks := ""
	if b.hookEvery > 0 {
		hooks = fmt.Sprintf(", a hook in 1 of %d Kustomizations", b.hookEvery)
	}
	say(">> N=%d: seeding %d repositories (%s layout%s) and waiting for their artifacts", n, b.c.repos, b.c.layout, hooks)
	if err := seedRepos(ctx, b.env, b.c.layout, n, b.c.repos, b.hookEvery); err != nil {
		return err
	}
	var repos []string
	for r := range b.c.repos {
		repos = append(repos, repoName(r))
	}
	return b.createSources(ctx, repos, b.c.sourceInterval)
}

// createFleet creates the n Kustomizations, -create-workers at a time,
// calling created (when not nil) with each name as its create returns.
func (b *bench) createFleet(ctx context.Context, n int, created func(name string)) error {
	say(">> N=%d: creating %d Kustomizations", n, n)
	if err := benchkit.ForEach(ctx, n, b.c.createWorkers, func(i int) error {
		if err := b.fast.Create(ctx, b.newFleetKustomization(i)); err != nil {
			return err
		}
		if created != nil {
			created(appName(i))
		}
		return nil
	}); err != nil {
		return fmt.Errorf("creating the Kustomizations: %w", err)
	}
	return nil
}

// runFleet measures one N in a fresh environment: the bare loop, then the
// fleet created at once until all are Ready, the rest afterwards, and
// drift.
func (b *bench) runFleet(ctx context.Context, n int) (*fleetFigures, error) {
	f := &fleetFigures{n: n, shards: b.shards, readyAt: map[string]time.Duration{}}
	if err := b.prepare(ctx, n); err != nil {
		return nil, err
	}

	// The bare loop first: the same four objects per app, named bare-…,
	// in the same namespaces, without Plumb's labels (so no controller
	// watches them).
	var bare []*unstructured.Unstructured
	for i := range n {
		bare = append(bare, appObjects(appName(i), "bare-")...)
	}
	time.Sleep(2 * time.Second)
	before, err := b.meter.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	if err := benchkit.ApplyAll(ctx, b.fast, bare, b.c.workers); err != nil {
		return nil, fmt.Errorf("bare loop: %w", err)
	}
	f.bare = time.Since(start)
	after, err := b.meter.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	f.bareDelta = benchkit.Diff(before, after)
	f.bareReqs = f.bareDelta.ResourceRequests()
	say("   bare loop, %d objects, %d workers: %s", len(bare), b.c.workers, benchfig.Round(f.bare))

	// The fleet, created at once.
	time.Sleep(2 * time.Second)
	rw, err := b.watchReady(ctx)
	if err != nil {
		return nil, err
	}
	defer rw.stop()
	tw, err := b.watchTail(ctx, rw)
	if err != nil {
		return nil, err
	}
	defer tw.stop()
	tailBefore := b.scrapeTail(ctx)
	if before, err = b.meter.Snapshot(ctx); err != nil {
		return nil, err
	}
	stopProfiles := b.startProfiles(ctx, n, "", b.c.profileSeconds)
	start = time.Now()
	tw.begin(b, rw, start)
	if err := b.createFleet(ctx, n, tw.noteCreated); err != nil {
		return nil, err
	}
	say("   created in %s", benchfig.Round(time.Since(start)))
	wctx, cancel := context.WithTimeout(ctx, b.c.readyTimeout)
	readyAt, err := rw.waitAll(wctx, n, func(have int) { say("   %d of %d Ready after %s", have, n, benchfig.Round(time.Since(start))) })
	cancel()
	if err != nil {
		b.describeNotReady(ctx, rw)
		return nil, err
	}
	f.allReady = readyAt[len(readyAt)-1].Sub(start)
	f.median = readyAt[(len(readyAt)-1)/2].Sub(start)
	rw.mu.Lock()
	for name, at := range rw.readyAt {
		f.readyAt[name] = at.Sub(start)
	}
	if rendered := sortedTimes(rw.renderedAt); len(rendered) > 0 {
		f.allRendered = rendered[len(rendered)-1].Sub(start)
		f.medianRendered = rendered[(len(rendered)-1)/2].Sub(start)
	}
	rw.mu.Unlock()
	// Events and the last status writes land just after the last Ready.
	time.Sleep(settle)
	if after, err = b.meter.Snapshot(ctx); err != nil {
		return nil, err
	}
	stopProfiles()
	f.sync = benchkit.Diff(before, after)
	f.tail = tw.figures(rw)
	f.tail.before, f.tail.after = tailBefore, b.scrapeTail(ctx)
	say("   all %d Ready after %s (median %s); %.0f API requests (%.1f per Kustomization)",
		n, benchfig.Round(f.allReady), benchfig.Round(f.median), f.sync.ResourceRequests(), f.sync.ResourceRequests()/float64(n))

	// At rest: nothing changes.
	say(">> N=%d: at rest for %s", n, b.c.restWindow)
	before = after
	time.Sleep(b.c.restWindow)
	if after, err = b.meter.Snapshot(ctx); err != nil {
		return nil, err
	}
	f.rest = benchkit.Diff(before, after)
	say("   at rest: %.0f API requests in %s", f.rest.ResourceRequests(), benchfig.Round(f.rest.D))

	if b.c.driftEdits > 0 {
		edits := min(b.c.driftEdits, n)
		say(">> N=%d: %d foreign edits at %d/s", n, edits, b.c.driftRate)
		if f.drift, f.driftMiss, err = b.drift(ctx, n, edits); err != nil {
			return nil, fmt.Errorf("drift: %w", err)
		}
		f.driftEdits = edits
		say("   drift: p50 %s, p99 %s, %d missed", benchfig.Round(benchfig.Percentile(f.drift, 50)), benchfig.Round(benchfig.Percentile(f.drift, 99)), f.driftMiss)
	}
	if b.c.floor {
		if err := b.runFloor(ctx, f); err != nil {
			return nil, err
		}
	}
	f.load = benchfig.LoadAvg()
	return f, nil
}

// describeNotReady prints a few Kustomizations that were not seen Ready.
func (b *bench) describeNotReady(ctx context.Context, rw *readyWatch) {
	var list kustomizev1.KustomizationList
	if err := b.wc.List(ctx, &list, client.InNamespace(fleetNamespace)); err != nil {
		say("   listing the Kustomizations: %v", err)
		return
	}
	rw.mu.Lock()
	defer rw.mu.Unlock()
	shown := 0
	for _, k := range list.Items {
		if _, ok := rw.readyAt[k.Name]; ok || shown == 5 {
			continue
		}
		shown++
		ready := conditions.Get(&k, meta.ReadyCondition)
		msg := "no Ready condition"
		if ready != nil {
			msg = fmt.Sprintf("Ready=%s %s: %.200s", ready.Status, ready.Reason, ready.Message)
		}
		say("   not Ready: %s (generation %d, observed %d): %s", k.Name, k.Generation, k.Status.ObservedGeneration, msg)
	}
}

// editTarget is one foreign edit: an app's ConfigMap.
type editTarget struct{ ns, name string }

func (t editTarget) key() string { return t.ns + "/" + t.name }

// drift makes foreign edits of the ConfigMaps of edits apps spread over
// the fleet, driftRate a second, each without waiting for the previous
// one, and measures from each patch returning until a watch sees the
// value back at Git's.
func (b *bench) drift(ctx context.Context, n, edits int) ([]time.Duration, int, error) {
	vw, err := b.watchConfigMaps(ctx)
	if err != nil {
		return nil, 0, err
	}
	defer vw.stop()
	time.Sleep(settle)
	var (
		mu        sync.Mutex
		latencies []time.Duration
		missed    int
		wg        sync.WaitGroup
	)
	gap := time.Second / time.Duration(b.c.driftRate)
	next := time.Now()
	for j := range edits {
		t := editTarget{ns: appName(j * n / edits), name: "config"}
		time.Sleep(time.Until(next))
		next = next.Add(gap)
		reverted, err := b.foreignEdit(ctx, vw, t, fmt.Sprintf("foreign-%d", j))
		if err != nil {
			return nil, 0, err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := reverted(30 * time.Second)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				say("   %s: %v", t.key(), err)
				missed++
				return
			}
			latencies = append(latencies, d)
		}()
	}
	wg.Wait()
	if len(latencies) == 0 {
		return nil, missed, errors.New("no foreign edit was reverted")
	}
	return latencies, missed, nil
}

// foreignEdit sets data.key of t's ConfigMap to value as bench-intruder
// and returns how to wait, up to a timeout, until a watch sees Git's value
// again, timed from the patch's return.
func (b *bench) foreignEdit(ctx context.Context, vw *valueWatch, t editTarget, value string) (reverted func(timeout time.Duration) (time.Duration, error), err error) {
	seen := vw.Follow(t.key())
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: t.name, Namespace: t.ns}}
	patch := fmt.Sprintf(`{"data":{%q:%q}}`, driftKey, value)
	if err := b.fast.Patch(ctx, cm, client.RawPatch(types.MergePatchType, []byte(patch)), client.FieldOwner("bench-intruder")); err != nil {
		vw.Unfollow(t.key())
		return nil, fmt.Errorf("foreign edit of %s: %w", t.key(), err)
	}
	returned := time.Now()
	return func(timeout time.Duration) (time.Duration, error) {
		defer vw.Unfollow(t.key())
		return benchfig.AwaitRevert(ctx, seen, cm.ResourceVersion, desiredValue(t.ns), returned, timeout)
	}, nil
}

// readyFleet makes a fleet of n Ready, for the benches that start from a
// fleet at rest (-restart, -soak, -nats-outage), and lets its last writes
// land.
func (b *bench) readyFleet(ctx context.Context, n int) error {
	if err := b.prepare(ctx, n); err != nil {
		return err
	}
	rw, err := b.watchReady(ctx)
	if err != nil {
		return err
	}
	defer rw.stop()
	start := time.Now()
	if err := b.createFleet(ctx, n, nil); err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, b.c.readyTimeout)
	defer cancel()
	if _, err := rw.waitAll(wctx, n, func(have int) { say("   %d of %d Ready after %s", have, n, benchfig.Round(time.Since(start))) }); err != nil {
		b.describeNotReady(ctx, rw)
		return err
	}
	say("   all %d Ready after %s; at rest for %s", n, benchfig.Round(time.Since(start)), lateWrites)
	// Hooks finish and the last status writes land.
	time.Sleep(lateWrites)
	return nil
}

// valueWatch follows the fleet's ConfigMaps (those with Plumb's ownership
// label) and hands each change of data.key to whoever follows it. The
// watch is opened again where the API server ended it (every 30 to 60
// minutes, its request timeout): a soak outlives many.
type valueWatch struct {
	stop context.CancelFunc
	benchfig.Followers
}

func (b *bench) watchConfigMaps(ctx context.Context) (*valueWatch, error) {
	ctx, cancel := context.WithCancel(ctx)
	vw := &valueWatch{stop: cancel}
	follow, err := b.followConfigMaps(ctx, func(ev watch.Event) {
		at := time.Now()
		if cm, ok := ev.Object.(*corev1.ConfigMap); ok && ev.Type != watch.Bookmark {
			vw.Deliver(cm.Namespace+"/"+cm.Name, benchfig.Observation{ResourceVersion: cm.ResourceVersion, Value: cm.Data[driftKey], At: at})
		}
	})
	if err != nil {
		cancel()
		return nil, err
	}
	go func() {
		if err := follow(); err != nil {
			say("   the ConfigMaps' watch could not be opened again: %v", err)
		}
	}()
	return vw, nil
}

// followConfigMaps lists the fleet's ConfigMaps (those with Plumb's
// ownership label) now and returns how to watch them from there, each
// event to handle, until ctx ends: the watch is opened again where the
// API server ended it.
func (b *bench) followConfigMaps(ctx context.Context, handle func(watch.Event)) (follow func() error, err error) {
	list := &corev1.ConfigMapList{}
	if err := b.wc.List(ctx, list, client.HasLabels{kustomizev1.NameLabel}, client.Limit(1)); err != nil {
		return nil, err
	}
	open := func(rv string) (watch.Interface, error) {
		return b.wc.Watch(ctx, &corev1.ConfigMapList{}, client.HasLabels{kustomizev1.NameLabel},
			&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true}})
	}
	return func() error { return benchkit.Follow(ctx, list.ResourceVersion, open, handle) }, nil
}

func say(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }
