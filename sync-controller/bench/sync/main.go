package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	"go.uber.org/zap/zapcore"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	"plumb.dev/pkg/benchfig"
	"plumb.dev/pkg/testenv"
	"plumb.dev/sync-controller/internal/controller"
)

// settle is how long after a measured moment requests are still counted:
// events are posted asynchronously, after the status that ends the clock.
const settle = 500 * time.Millisecond

type config struct {
	objects     int
	runs        int
	noopRuns    int
	driftEdits  int
	remoteDrift bool
	memEdits    int
	refWorkers  int
	binary      string
	binaryArgs  string
	memoryOnly  bool
	profileDir  string
	controller  controllerOptions
	driftGap    time.Duration
	totalBudget time.Duration
	// The fight: a competing writer's rate and how long it writes; the
	// window is sync-controller's --drift-fight-window. fightOnly skips
	// everything else.
	fightRate     int
	fightDuration time.Duration
	fightWindow   time.Duration
	fightOnly     bool
	// shapes are the specs timed with a real render (shapes.go).
	shapes []shape
	// shapesOnly skips the unshaped workloads' syncs, the no-op
	// resyncs, drift and prune: the shapes' runs alone.
	shapesOnly bool
	// bareOrderRuns times the bare loop in each order (order.go).
	bareOrderRuns int
}

func main() {
	var c config
	flag.IntVar(&c.objects, "objects", 1000, "objects per Kustomization")
	flag.IntVar(&c.runs, "runs", 3, "initial syncs per side and workload; the median is reported")
	flag.IntVar(&c.noopRuns, "noop-runs", 5, "no-op resyncs per workload")
	flag.IntVar(&c.driftEdits, "drift-edits", 50, "foreign edits for the drift latency")
	flag.BoolVar(&c.remoteDrift, "remote-drift", true, "also time the drift edits in a second control plane that a Kustomization targets through spec.kubeConfig")
	flag.IntVar(&c.memEdits, "memory-drift-edits", 10, "foreign edits per workload while the binary's memory is watched")
	flag.IntVar(&c.refWorkers, "reference-workers", 4, "workers of a second bare loop, the reference column of docs/design/sync-engine.md; 0 skips it")
	flag.StringVar(&c.binary, "controller-binary", "", "a built sync-controller for the memory figure; empty builds one, \"none\" skips the figure")
	flag.StringVar(&c.binaryArgs, "controller-args", "", "extra flags for the sync-controller binary, space-separated (e.g. --log-level=debug)")
	flag.BoolVar(&c.memoryOnly, "memory-only", false, "run only the binary's phase (memory), not the in-process figures")
	flag.StringVar(&c.profileDir, "profile-dir", "", "write CPU profiles of the in-process controller (initial sync, no-op resyncs, drift) here")
	flag.IntVar(&c.controller.applyConcurrency, "apply-concurrency", 16, "sync-controller's --apply-concurrency (main.go's default), also the bare loop's workers")
	flag.DurationVar(&c.controller.driftDebounce, "drift-debounce", 100*time.Millisecond, "sync-controller's --drift-debounce (main.go's default)")
	flag.IntVar(&c.controller.concurrent, "concurrent", 4, "sync-controller's --concurrent (the shared default)")
	flag.DurationVar(&c.driftGap, "drift-gap", 300*time.Millisecond, "pause between foreign edits")
	flag.DurationVar(&c.totalBudget, "timeout", 40*time.Minute, "give up after this long")
	flag.IntVar(&c.fightRate, "fight-rate", 5, "writes per second of the competing writer in the fight")
	flag.DurationVar(&c.fightDuration, "fight-duration", time.Minute, "how long the competing writer writes; 0 skips the fight")
	flag.DurationVar(&c.fightWindow, "drift-fight-window", 30*time.Second, "sync-controller's --drift-fight-window (main.go's default) for the fight; the baseline runs with 0 (off)")
	flag.BoolVar(&c.fightOnly, "fight-only", false, "run only the fight (with detection off, then on), nothing else")
	flag.BoolVar(&c.shapesOnly, "shapes-only", false, "time only the shapes (-shapes) against their bare loops, none of the other figures")
	shapeList := flag.String("shapes", "targetNamespace,images-patch", "specs whose initial sync is also timed with pkg/render rendering a tree of the mixed objects inside the clock (issue 46), comma-separated; empty for none")
	flag.IntVar(&c.bareOrderRuns, "bare-order-runs", 0, "runs of the bare loop of the mixed objects in each order (the stream's, kinds interleaved; canonical; canonical, kind group by kind group), with the API server's and etcd's CPU, before the controller starts; 0 skips them")
	flag.Parse()
	var err error
	if c.shapes, err = parseShapes(*shapeList); err != nil {
		fmt.Fprintln(os.Stderr, "syncbench: -shapes:", err)
		os.Exit(2)
	}

	level := zapcore.ErrorLevel
	if os.Getenv("PLUMB_BENCH_DEBUG") != "" {
		level = zapcore.DebugLevel
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(level)))
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "syncbench:", err)
		os.Exit(1)
	}
}

// bench holds what the measurements share.
type bench struct {
	c    config
	env  *testenv.Environment
	wc   client.WithWatch // the bench's own client: not counted
	bare client.Client    // the bare loop's client
	// bareCounter times the bare loop's requests, as counter the
	// controller's: how busy its workers were (occupancy).
	bareCounter *requestCounter
	art         *artifactServer
	counter     *requestCounter // nil while the binary runs
	res         *results
	runID       int
}

func run(c config) error {
	ctx, cancel := context.WithTimeout(context.Background(), c.totalBudget)
	defer cancel()
	load0 := benchfig.LoadAvg()
	source := sourceState()
	fmt.Fprintf(os.Stderr, ">> starting kube-apiserver, etcd and NATS\n")
	env, err := testenv.Start()
	if err != nil {
		return err
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the test environment:", err)
		}
	}()
	b := &bench{c: c, env: env, res: newResults(c)}
	b.res.source = source
	if b.wc, err = client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme}); err != nil {
		return err
	}
	bareCfg := rest.CopyConfig(env.Config)
	bareCfg.QPS, bareCfg.Burst = -1, -1
	b.bareCounter = &requestCounter{}
	bareCfg.WrapTransport = b.bareCounter.wrap
	if b.bare, err = client.New(bareCfg, client.Options{Scheme: env.Scheme}); err != nil {
		return err
	}
	if b.res.apf, err = priorityAndFairness(env.Config); err != nil {
		return err
	}
	b.art = newArtifactServer()
	defer b.art.Close()

	if c.fightDuration > 0 {
		// Before the in-process controller of the other figures starts:
		// each fight has its own.
		if err := b.fightPhase(ctx); err != nil {
			return fmt.Errorf("fight: %w", err)
		}
	}
	if c.fightOnly {
		b.res.load = [2]string{load0, benchfig.LoadAvg()}
		b.res.printFights(os.Stdout)
		return nil
	}

	if c.binary != "none" {
		// ConfigMaps first: the case of docs/design/sync-engine.md's targets.
		if err := b.memoryPhase(ctx, []workload{configMaps, mixed}); err != nil {
			return fmt.Errorf("memory phase: %w", err)
		}
	}
	if c.memoryOnly {
		b.res.load = [2]string{load0, benchfig.LoadAvg()}
		b.res.print(os.Stdout)
		return nil
	}

	fmt.Fprintf(os.Stderr, ">> timing status writes\n")
	if b.res.statusWrite, b.res.statusWriteEmpty, b.res.statusWriteStored, err = b.statusProbe(ctx, mixed, 9); err != nil {
		return fmt.Errorf("status probe: %w", err)
	}

	if c.bareOrderRuns > 0 {
		fmt.Fprintf(os.Stderr, ">> the bare loop in each order\n")
		if err := b.bareOrderPhase(ctx, c.bareOrderRuns); err != nil {
			return fmt.Errorf("bare loop orders: %w", err)
		}
	}

	fmt.Fprintf(os.Stderr, ">> starting sync-controller in this process (apply concurrency %d)\n", c.controller.applyConcurrency)
	b.counter = &requestCounter{}
	c.controller.fightWindow = c.fightWindow
	stop, err := startController(env.Config, env.NATSURL, b.counter, c.controller)
	if err != nil {
		return err
	}
	defer stop()

	if c.shapesOnly {
		fmt.Fprintf(os.Stderr, ">> shapes: a real render in the loop\n")
		if err := b.shapePhase(ctx, c.shapes); err != nil {
			return err
		}
		b.res.load = [2]string{load0, benchfig.LoadAvg()}
		b.res.print(os.Stdout)
		return nil
	}
	last := map[workload]*kustomizev1.Kustomization{}
	for _, w := range []workload{mixed, configMaps} {
		var lastBare []*unstructured.Unstructured
		for r := range c.runs {
			// The sides alternate which goes first, so background load
			// and etcd's growth hit both alike.
			sides := []func() error{
				func() error {
					objs, s, err := b.bareInitial(ctx, w, c.controller.applyConcurrency)
					b.res.bare[w].add(s)
					lastBare = objs
					return err
				},
				func() error {
					profile := r == c.runs-1 && w == mixed
					ks, s, err := b.controllerInitial(ctx, w, profile)
					b.res.initial[w].add(s)
					last[w] = ks
					return err
				},
			}
			if c.refWorkers > 0 && c.refWorkers != c.controller.applyConcurrency {
				sides = append(sides, func() error {
					_, s, err := b.bareInitial(ctx, w, c.refWorkers)
					b.res.bareRef[w].add(s)
					return err
				})
			}
			for i := range sides {
				if err := sides[(i+r)%len(sides)](); err != nil {
					return fmt.Errorf("initial sync of %s, run %d: %w", w.describe(c.objects), r+1, err)
				}
			}
		}

		stopProfile := b.profile("noop-" + string(w))
		for i := range c.noopRuns {
			s, err := b.noopResync(ctx, last[w])
			if err != nil {
				stopProfile()
				return fmt.Errorf("no-op resync %d of %s: %w", i+1, w.describe(c.objects), err)
			}
			b.res.noop[w].add(s)
		}
		stopProfile()
		for range min(c.noopRuns, 3) {
			start := time.Now()
			if err := b.applyAll(ctx, lastBare, c.controller.applyConcurrency); err != nil {
				return fmt.Errorf("bare re-apply: %w", err)
			}
			b.res.bareNoop[w].add(sample{d: time.Since(start)})
		}
	}

	if len(c.shapes) > 0 {
		fmt.Fprintf(os.Stderr, ">> shapes: a real render in the loop\n")
		if err := b.shapePhase(ctx, c.shapes); err != nil {
			return err
		}
	}

	stopProfile := b.profile("drift")
	lat, failures, err := b.drift(ctx, last[mixed], mixed, c.driftEdits)
	stopProfile()
	if err != nil {
		return fmt.Errorf("drift: %w", err)
	}
	b.res.drift, b.res.driftFailures = lat, failures
	b.heapProfile("heap-after-drift")
	if c.remoteDrift {
		if b.res.remoteDrift, b.res.remoteDriftFailures, err = b.remoteDrift(ctx, last[mixed]); err != nil {
			return fmt.Errorf("drift in a remote cluster: %w", err)
		}
	}

	// Deleting the Kustomization prunes its objects through the finalizer.
	b.counter.reset()
	start := time.Now()
	if err := b.wc.Delete(ctx, last[mixed]); err != nil {
		return err
	}
	if err := b.waitGone(ctx, last[mixed], 5*time.Minute); err != nil {
		return err
	}
	elapsed := time.Since(start)
	total, counts := b.counter.snapshot()
	if os.Getenv("SYNCBENCH_TRACE") != "" {
		b.counter.mu.Lock()
		for _, r := range b.counter.records {
			fmt.Fprintf(os.Stderr, "TRACE %s +%s %s\n", r.kind, r.start.Sub(start).Round(time.Millisecond), r.duration.Round(time.Millisecond))
		}
		b.counter.mu.Unlock()
	}
	b.res.prune = sample{d: elapsed, requests: total, counts: counts}
	fmt.Fprintf(os.Stderr, "   deletion with prune, %s: %s, %d requests\n", mixed.describe(c.objects), benchfig.Round(elapsed), total)
	// What the controller still does about the Kustomization once it is
	// gone: requests until a quiet second, at most half a minute.
	b.counter.reset()
	quietSince, deadline := time.Now(), time.Now().Add(30*time.Second)
	lastTotal := 0
	for time.Since(quietSince) < time.Second && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		if n, _ := b.counter.snapshot(); n != lastTotal {
			lastTotal, quietSince = n, time.Now()
		}
	}
	afterTotal, afterCounts := b.counter.snapshot()
	b.res.afterPrune = sample{d: time.Since(start) - elapsed, requests: afterTotal, counts: afterCounts}

	b.res.load = [2]string{load0, benchfig.LoadAvg()}
	b.res.print(os.Stdout)
	b.res.orders.print(os.Stdout, c)
	b.res.printFights(os.Stdout)
	return nil
}

// sourceState names the commit measured and whether the controller's code
// had uncommitted changes (other engineers work in the same checkout).
func sourceState() string {
	root, err := testenv.RepoRoot()
	if err != nil {
		return "?"
	}
	head, err := exec.Command("git", "-C", root, "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "?"
	}
	state := "commit " + strings.TrimSpace(string(head))
	dirty, err := exec.Command("git", "-C", root, "status", "--porcelain", "--", "sync-controller", "pkg", "api").Output()
	if err != nil {
		return state
	}
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(string(dirty)), "\n") {
		if line != "" && !strings.Contains(line, "sync-controller/bench/sync/") {
			n++
		}
	}
	if n > 0 {
		state += fmt.Sprintf(" with %d uncommitted file(s) under sync-controller, pkg, api", n)
	}
	return state
}

// memoryPhase runs the built binary as its own process, a fresh one per
// workload, through an initial sync, no-op resyncs, foreign edits and the
// deletion of the Kustomization (which prunes its objects), and reads its
// peak resident memory. It runs before the in-process controller starts and
// deletes what it created, so the two never share a Kustomization.
func (b *bench) memoryPhase(ctx context.Context, workloads []workload) error {
	root, err := testenv.RepoRoot()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "plumb-syncbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	binary := b.c.binary
	if binary == "" {
		fmt.Fprintf(os.Stderr, ">> building sync-controller\n")
		if binary, err = buildController(root, dir); err != nil {
			return err
		}
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*b.env.Kubeconfig(), kubeconfig); err != nil {
		return err
	}
	for _, w := range workloads {
		if err := b.memoryRun(ctx, binary, kubeconfig, w); err != nil {
			return err
		}
	}
	b.res.mem.measured = true
	return nil
}

// idleWait is how long a freshly started binary runs before its idle
// memory is read: time to start the manager, list and watch.
const idleWait = 3 * time.Second

func (b *bench) memoryRun(ctx context.Context, binary, kubeconfig string, w workload) error {
	logPath := filepath.Join(os.TempDir(), "syncbench-sync-controller-"+string(w)+".log")
	fmt.Fprintf(os.Stderr, ">> running %s as its own process for %s (log: %s)\n", binary, w.describe(b.c.objects), logPath)
	p, err := startProcess(binary, kubeconfig, b.env.NATSURL, logPath, strings.Fields(b.c.binaryArgs)...)
	if err != nil {
		return err
	}
	defer func() {
		if err := p.stop(30 * time.Second); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}()
	m := &b.res.mem
	time.Sleep(idleWait)
	idle, err := p.status()
	if err != nil {
		return err
	}
	m.idle[w], m.idleAnon[w], m.idleFile[w] = kib(idle.VmRSS), kib(idle.RssAnon), kib(idle.RssFile)
	ks, s, err := b.controllerInitial(ctx, w, false)
	if err != nil {
		return fmt.Errorf("%w (%v)", err, p.alive())
	}
	m.initial[w] = s.d
	for range 3 {
		s, err := b.noopResync(ctx, ks)
		if err != nil {
			return fmt.Errorf("%w (%v)", err, p.alive())
		}
		m.noop[w] = append(m.noop[w], s.d)
		fmt.Fprintf(os.Stderr, "   no-op resync, %s: %s\n", w.describe(b.c.objects), benchfig.Round(s.d))
	}
	if m.drift[w], _, err = b.drift(ctx, ks, w, b.c.memEdits); err != nil {
		return fmt.Errorf("%w (%v)", err, p.alive())
	}
	peak, err := p.status()
	if err != nil {
		return err
	}
	m.hwm[w], m.anon[w], m.file[w] = kib(peak.VmHWM), kib(peak.RssAnon), kib(peak.RssFile)

	// Deleting the Kustomization prunes its objects through the finalizer;
	// this also leaves nothing behind for the in-process controller.
	start := time.Now()
	if err := b.wc.Delete(ctx, ks); err != nil {
		return err
	}
	if err := b.waitGone(ctx, ks, 5*time.Minute); err != nil {
		return fmt.Errorf("%w (%v)", err, p.alive())
	}
	m.prune[w] = time.Since(start)
	if _, m.hwmEnd[w], err = p.memory(); err != nil {
		return err
	}
	m.sampledMax[w] = p.sampledMax()
	fmt.Fprintf(os.Stderr, "   memory, %s: idle %s, VmHWM %s after the syncs, %s after pruning (in %s)\n",
		w.describe(b.c.objects), mib(m.idle[w]), mib(m.hwm[w]), mib(m.hwmEnd[w]), benchfig.Round(m.prune[w]))
	return nil
}

// newKustomization returns the Kustomization every run uses: prune on, no
// health wait (envtest runs no kube-controller-manager, so Deployments never
// become Available), an hour's interval so nothing but the bench triggers it.
func newKustomization(ns string) *kustomizev1.Kustomization {
	return &kustomizev1.Kustomization{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns},
		Spec: kustomizev1.KustomizationSpec{
			SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: "GitRepository", Name: "repo"},
			Interval:  metav1.Duration{Duration: time.Hour},
			Prune:     true,
			Timeout:   &metav1.Duration{Duration: 10 * time.Minute},
		},
	}
}

// controllerInitial creates a Kustomization in a fresh namespace, waits
// until sync-controller has taken it in hand (finalizer, Ready=Unknown while
// nothing is rendered), then plays render-controller and times from the
// rendered status being written until a watch sees Ready=True for the
// revision.
func (b *bench) controllerInitial(ctx context.Context, w workload, profile bool) (*kustomizev1.Kustomization, sample, error) {
	ns, err := b.env.Namespace(ctx, "bench-"+string(w))
	if err != nil {
		return nil, sample{}, err
	}
	name := ""
	if profile {
		name = "initial-" + string(w)
	}
	return b.initialSync(ctx, newKustomization(ns), w, name, nil)
}

// initialSync creates ks and times its first sync of the workload, as
// controllerInitial says. With renderFn the manifests are its, and the
// clock starts before it runs (the shapes: a real render in the loop);
// the sample's render is its time. With a profile name (and -profile-dir),
// the run is profiled: CPU from the start of the render (or of the
// rendered status write) to Ready, and the heap on both sides.
func (b *bench) initialSync(ctx context.Context, ks *kustomizev1.Kustomization, w workload, profile string,
	renderFn func() (string, time.Duration, error)) (*kustomizev1.Kustomization, sample, error) {
	ns := ks.Namespace
	kw, err := watchKustomization(ctx, b.wc, client.ObjectKeyFromObject(ks))
	if err != nil {
		return nil, sample{}, err
	}
	defer kw.stop()
	if err := b.wc.Create(ctx, ks); err != nil {
		return nil, sample{}, err
	}
	wctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	if _, _, err := kw.until(wctx, func(k *kustomizev1.Kustomization) bool {
		return controllerutil.ContainsFinalizer(k, controller.Finalizer) && conditions.Has(k, meta.ReadyCondition)
	}); err != nil {
		return nil, sample{}, fmt.Errorf("sync-controller did not pick up the new Kustomization: %w", err)
	}

	b.runID++
	revision := fmt.Sprintf("main@sha1:%040x", b.runID)
	if err := b.quiesce(ctx); err != nil {
		return nil, sample{}, err
	}
	stopProfile := func() {}
	if profile != "" {
		// The heap profiles on both sides of the run: their difference
		// (pprof -base) is what the initial sync allocated.
		b.heapProfile("heap-before-" + profile)
		stopProfile = b.profile(profile)
	}
	defer stopProfile()
	b.counter.reset()
	renderStart := time.Now()
	data, renderTook := manifests(w, ns, b.c.objects), time.Duration(0)
	if renderFn != nil {
		var err error
		if data, renderTook, err = renderFn(); err != nil {
			return nil, sample{}, fmt.Errorf("rendering: %w", err)
		}
	}
	cpu0, err := cpuNow()
	if err != nil {
		return nil, sample{}, err
	}
	if err := b.art.render(ctx, b.wc, ks, revision, data); err != nil {
		return nil, sample{}, err
	}
	start := time.Now()
	at, got, err := kw.until(wctx, func(k *kustomizev1.Kustomization) bool {
		return k.Status.ObservedGeneration == k.Generation && conditions.IsReady(k) && k.Status.LastAppliedRevision == revision
	})
	if err != nil {
		return nil, sample{}, fmt.Errorf("no Ready=True for %s: %w", revision, err)
	}
	elapsed := at.Sub(start)
	if renderFn != nil {
		elapsed = at.Sub(renderStart)
	}
	stopProfile()
	if profile != "" {
		b.heapProfile("heap-after-" + profile)
	}
	time.Sleep(settle)
	total, counts := b.counter.snapshot()
	// The CPU to Ready and the settle after it, as the bare loop's
	// (timedApplyAll): what the last applies set off is counted on both sides.
	cpu1, err := cpuNow()
	if err != nil {
		return nil, sample{}, err
	}
	if got.Status.Inventory == nil || len(got.Status.Inventory.Entries) != b.c.objects {
		n := 0
		if got.Status.Inventory != nil {
			n = len(got.Status.Inventory.Entries)
		}
		return nil, sample{}, fmt.Errorf("the Kustomization is Ready, but its inventory holds %d entries, not %d", n, b.c.objects)
	}
	tl := b.counter.timeline(start, at).withDownload(start, b.art.lastDownload())
	busy := b.counter.occupancy(b.c.controller.applyConcurrency)
	cpu := cpu1.since(cpu0)
	fmt.Fprintf(os.Stderr, "   sync-controller initial sync, %s: %s, %d requests; %s; CPU (API server and etcd, bench process) %s\n", w.describe(b.c.objects), benchfig.Round(elapsed), total, tl, cpu)
	if renderFn != nil {
		fmt.Fprintf(os.Stderr, "   its object requests: %s\n", busy)
	}
	return got, sample{d: elapsed, requests: total, counts: counts, timeline: tl, render: renderTook, cpu: cpu, busy: busy}, nil
}

// bareInitial applies the workload's objects to a fresh namespace with a
// bare loop of server-side applies and times it.
func (b *bench) bareInitial(ctx context.Context, w workload, workers int) ([]*unstructured.Unstructured, sample, error) {
	ns, err := b.env.Namespace(ctx, "bench-bare")
	if err != nil {
		return nil, sample{}, err
	}
	objs, err := bareObjects(w, ns, b.c.objects)
	if err != nil {
		return nil, sample{}, err
	}
	if err := b.quiesce(ctx); err != nil {
		return nil, sample{}, err
	}
	cpu, elapsed, err := b.timedApplyAll(ctx, objs, workers)
	if err != nil {
		return nil, sample{}, err
	}
	fmt.Fprintf(os.Stderr, "   bare loop (%d workers), %s: %s, CPU (API server and etcd, bench process) %s\n", workers, w.describe(b.c.objects), benchfig.Round(elapsed), cpu)
	return objs, sample{d: elapsed, requests: len(objs), cpu: cpu}, nil
}

// timedApplyAll is applyAll timed, with the CPU it cost until settle after
// its last answer, as the controller's runs count theirs after Ready: the
// watch cache and etcd finish a moment after the last write.
func (b *bench) timedApplyAll(ctx context.Context, objs []*unstructured.Unstructured, workers int) (cpuUse, time.Duration, error) {
	cpu0, err := cpuNow()
	if err != nil {
		return cpuUse{}, 0, err
	}
	start := time.Now()
	err = b.applyAll(ctx, objs, workers)
	elapsed := time.Since(start)
	if err != nil {
		return cpuUse{}, 0, err
	}
	time.Sleep(settle)
	cpu1, err := cpuNow()
	return cpu1.since(cpu0), elapsed, err
}

// applyAll server-side-applies every object, force, under its own field
// manager, with at most workers requests in flight: the bare loop.
func (b *bench) applyAll(ctx context.Context, objs []*unstructured.Unstructured, workers int) error {
	sem := make(chan struct{}, workers)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for _, o := range objs {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			obj := o.DeepCopy()
			err := b.bare.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner("bench-bare"), client.ForceOwnership) // the same call the engine makes
			if err != nil {
				mu.Lock()
				if firstErr == nil {
					firstErr = fmt.Errorf("%s %s: %w", o.GetKind(), o.GetName(), err)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return firstErr
}

// noopResync asks for a reconcile with the requestedAt annotation and times
// it until status.lastHandledReconcileAt carries the token, counting the
// controller's requests.
func (b *bench) noopResync(ctx context.Context, ks *kustomizev1.Kustomization) (sample, error) {
	time.Sleep(settle)
	kw, err := watchKustomization(ctx, b.wc, client.ObjectKeyFromObject(ks))
	if err != nil {
		return sample{}, err
	}
	defer kw.stop()
	token := time.Now().UTC().Format(time.RFC3339Nano)
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, meta.ReconcileRequestAnnotation, token)
	target := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Name: ks.Name, Namespace: ks.Namespace}}
	b.counter.reset()
	if err := b.wc.Patch(ctx, target, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		return sample{}, err
	}
	start := time.Now()
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	at, got, err := kw.until(wctx, func(k *kustomizev1.Kustomization) bool {
		return k.Status.LastHandledReconcileAt == token
	})
	if err != nil {
		return sample{}, err
	}
	elapsed := at.Sub(start)
	time.Sleep(settle)
	total, counts := b.counter.snapshot()
	if !conditions.IsReady(got) {
		return sample{}, fmt.Errorf("the resync left the Kustomization not Ready: %s", describeKs(got))
	}
	return sample{d: elapsed, requests: total, counts: counts, timeline: b.counter.timeline(start, at)}, nil
}

// driftTarget is one object a foreign edit changes.
type driftTarget struct {
	kind, name string
	desired    string // the value Git declares, as valueWatch reports it
}

func (t driftTarget) key() string { return t.kind + "/" + t.name }

// driftTargets picks distinct objects to edit, Deployments and ConfigMaps
// alternating when the workload has both.
func driftTargets(w workload, n, edits int) []driftTarget {
	var deployments, cms []int
	for i := range n {
		switch w.kindOf(i) {
		case "Deployment":
			deployments = append(deployments, i)
		case "ConfigMap":
			cms = append(cms, i)
		}
	}
	var out []driftTarget
	for j := range edits {
		if len(deployments) > 0 && j%2 == 0 {
			i := deployments[(j/2)%len(deployments)]
			out = append(out, driftTarget{kind: "Deployment", name: objectName("Deployment", i), desired: "1"})
			continue
		}
		k := j
		if len(deployments) > 0 {
			k = j / 2
		}
		i := cms[(k*max(1, len(cms)/max(1, edits)))%len(cms)]
		name := objectName("ConfigMap", i)
		out = append(out, driftTarget{kind: "ConfigMap", name: name, desired: name})
	}
	return out
}

// drift makes foreign edits one at a time and measures, for each, the time
// from the patch returning until a watch sees the value back at Git's.
func (b *bench) drift(ctx context.Context, ks *kustomizev1.Kustomization, w workload, edits int) ([]time.Duration, int, error) {
	return b.driftIn(ctx, b.wc, ks, driftTargets(w, b.c.objects, edits))
}

// driftIn is drift with the foreign edits made, and the values watched, in
// the cluster of wc: the Kustomization's own, or the remote cluster its
// spec.kubeConfig names.
func (b *bench) driftIn(ctx context.Context, wc client.WithWatch, ks *kustomizev1.Kustomization, targets []driftTarget) ([]time.Duration, int, error) {
	vw, err := watchValues(ctx, wc, ks.Namespace)
	if err != nil {
		return nil, 0, err
	}
	defer vw.stop()
	time.Sleep(settle)
	var latencies []time.Duration
	failures := 0
	for j, t := range targets {
		seen := vw.Follow(t.key())
		var obj client.Object
		var patch string
		if t.kind == "Deployment" {
			obj = &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: t.name, Namespace: ks.Namespace}}
			patch = fmt.Sprintf(`{"spec":{"replicas":%d}}`, 3+j%5)
		} else {
			obj = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: t.name, Namespace: ks.Namespace}}
			patch = fmt.Sprintf(`{"data":{"key":"foreign-%d"}}`, j)
		}
		if err := wc.Patch(ctx, obj, client.RawPatch(types.MergePatchType, []byte(patch)), client.FieldOwner("bench-intruder")); err != nil {
			vw.Unfollow(t.key())
			return nil, 0, fmt.Errorf("foreign edit of %s: %w", t.key(), err)
		}
		returned := time.Now()
		d, err := benchfig.AwaitRevert(ctx, seen, obj.GetResourceVersion(), t.desired, returned, 30*time.Second)
		vw.Unfollow(t.key())
		if err != nil {
			fmt.Fprintf(os.Stderr, "   %s: %v\n", t.key(), err)
			failures++
		} else {
			latencies = append(latencies, d)
		}
		time.Sleep(b.c.driftGap)
	}
	if len(latencies) == 0 {
		return nil, failures, fmt.Errorf("no foreign edit was reverted")
	}
	fmt.Fprintf(os.Stderr, "   drift, %d edits of %s/%s: p50 %s, max %s\n", len(targets), ks.Namespace, ks.Name,
		benchfig.Round(benchfig.Percentile(latencies, 50)), benchfig.Round(benchfig.Percentile(latencies, 100)))
	return latencies, failures, nil
}

// waitGone polls until the Kustomization is deleted (its finalizer done).
func (b *bench) waitGone(ctx context.Context, ks *kustomizev1.Kustomization, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		err := b.wc.Get(ctx, client.ObjectKeyFromObject(ks), &kustomizev1.Kustomization{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after %s, Kustomization %s/%s is still not deleted", timeout, ks.Namespace, ks.Name)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// profile starts a CPU profile named after what it covers, when asked for.
func (b *bench) profile(name string) func() {
	if b.c.profileDir == "" {
		return func() {}
	}
	if err := os.MkdirAll(b.c.profileDir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "profile:", err)
		return func() {}
	}
	f, err := os.Create(filepath.Join(b.c.profileDir, name+".pprof"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "profile:", err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		fmt.Fprintln(os.Stderr, "profile:", err)
		return func() {}
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			pprof.StopCPUProfile()
			f.Close()
		})
	}
}

// heapProfile writes the in-use heap of this process (the in-process
// controller, but also the embedded NATS server and the bench's clients),
// when profiles are asked for.
func (b *bench) heapProfile(name string) {
	if b.c.profileDir == "" {
		return
	}
	if err := os.MkdirAll(b.c.profileDir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "profile:", err)
		return
	}
	f, err := os.Create(filepath.Join(b.c.profileDir, name+".pprof"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "profile:", err)
		return
	}
	defer f.Close()
	runtime.GC()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		fmt.Fprintln(os.Stderr, "profile:", err)
	}
}

// priorityAndFairness reports whether the API server runs priority and
// fairness (it answers with the flow schema headers), the case in which
// sync-controller turns client-side rate limiting off.
func priorityAndFairness(cfg *rest.Config) (bool, error) {
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return false, err
	}
	resp, err := httpClient.Get(strings.TrimSuffix(cfg.Host, "/") + "/livez/ping")
	if err != nil {
		return false, err
	}
	resp.Body.Close()
	return resp.Header.Get("X-Kubernetes-PF-FlowSchema-UID") != "", nil
}
