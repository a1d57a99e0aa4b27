package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/e2e/bench/benchkit"
	"plumb.dev/e2e/localenv"
	"plumb.dev/pkg/benchfig"
	"plumb.dev/pkg/renderfeed"
)

// The fleet's tail (issue 45, item 5): the median Kustomization is Ready
// at about the floor's all-done time, the last ones at 1.5–1.8× it. Where
// the last ones spend their time is told by when each step of each
// Kustomization was first seen, each by the cheapest observer there is:
//
//   - created: the bench's create returned;
//   - offered: its render on render-controller's feed (the bench reads the
//     feed as a second subscriber: the records sync-controller gets, at
//     the same moment, with no status write to watch for any more);
//   - applied: its ConfigMap seen by a watch of the apps' ConfigMaps
//     (one object of four, so the sync's start);
//   - Ready: the readyWatch's time.
//
// Beside them, every second: how many were at each step and the CPU each
// process spent in that second (from /proc, no scrape), so a tail spent
// waiting shows as idle processes with Kustomizations not Ready; and the
// controllers' reconciles and queue figures, scraped before and after.
type tailWatch struct {
	start time.Time
	mu    sync.Mutex
	// created, offered and applied are when each step was first seen,
	// by Kustomization name.
	created, offered, applied map[string]time.Time
	samples                   []tailSample
	// ctx ends with stop, and with it every goroutine done counts: the
	// observers and the sampler (the sync's context outlives figures).
	ctx  context.Context
	stop context.CancelFunc
	done sync.WaitGroup
}

// tailSample is one second of the sync: the counts at its end and the
// CPU time each process had spent by then.
type tailSample struct {
	at                               time.Duration
	created, offered, applied, ready int
	cpu                              map[string]time.Duration
	// self is the bench's own CPU time (its watches and creates share
	// the cores), machine the host's steal among the rest.
	self    time.Duration
	machine benchfig.MachineCPU
}

// tailFigures is what the tail section prints for one N.
type tailFigures struct {
	created, offered, applied, ready map[string]time.Duration
	samples                          []tailSample
	// before and after are the controllers' figures around the sync,
	// by controller and metric.
	before, after map[string]benchkit.Counters
	// floorStatus and floorDone: when each of the floor's status writes
	// returned, and each of its Kustomizations was done (objects too),
	// from the floor's start.
	floorStatus, floorDone []time.Duration
}

// The controllers' metrics the tail reads before and after the sync:
// reconciles by result and the work queues' waits and work times.
var tailMetrics = []string{
	"controller_runtime_reconcile_total",
	"workqueue_adds_total",
	"workqueue_retries_total",
	"workqueue_queue_duration_seconds_sum",
	"workqueue_queue_duration_seconds_count",
	"workqueue_work_duration_seconds_sum",
	// The steps of a reconcile of a Kustomization (pkg/reconcile's), under
	// each controller's own subsystem.
	"plumb_sync_step_duration_seconds_sum",
	"plumb_sync_step_duration_seconds_count",
	"plumb_render_step_duration_seconds_sum",
	"plumb_render_step_duration_seconds_count",
}

var tailControllers = []string{localenv.RenderController, localenv.SyncController}

// scrapeTail reads tailMetrics from render- and sync-controller.
func (b *bench) scrapeTail(ctx context.Context) map[string]benchkit.Counters {
	out := map[string]benchkit.Counters{}
	for _, name := range tailControllers {
		for _, m := range tailMetrics {
			got, err := b.meter.Scrape(ctx, name, m)
			if err != nil {
				say("   tail: %s's %s: %v", name, m, err)
				continue
			}
			out[name+" "+m] = got
		}
	}
	return out
}

// watchTail starts the tail's observers; start is the clock's zero. With
// shards or standbys there is more than one feed: only the ConfigMaps
// and the samples are kept then.
func (b *bench) watchTail(ctx context.Context, rw *readyWatch) (*tailWatch, error) {
	ctx, cancel := context.WithCancel(ctx)
	tw := &tailWatch{created: map[string]time.Time{}, offered: map[string]time.Time{}, applied: map[string]time.Time{}, ctx: ctx, stop: cancel}
	if render, ok := b.env.Controllers[localenv.RenderController]; ok && b.shards == 1 && !render.Elects {
		sub := &renderfeed.Subscriber{
			URL: "http://" + render.StorageAddr + renderfeed.Path,
			Handle: func(rec renderfeed.Record) {
				at := time.Now()
				if rec.Withdrawn || rec.Kind != kustomizev1.KustomizationKind || rec.Namespace != fleetNamespace {
					return
				}
				tw.mu.Lock()
				if _, seen := tw.offered[rec.Name]; !seen {
					tw.offered[rec.Name] = at
				}
				tw.mu.Unlock()
			},
		}
		tw.done.Add(1)
		go func() {
			defer tw.done.Done()
			_ = sub.Start(ctx)
		}()
	}
	follow, err := b.followConfigMaps(ctx, func(ev watch.Event) {
		at := time.Now()
		cm, ok := ev.Object.(*corev1.ConfigMap)
		if !ok || ev.Type != watch.Added || !strings.HasPrefix(cm.Namespace, "app-") {
			return
		}
		tw.mu.Lock()
		if _, seen := tw.applied[cm.Namespace]; !seen {
			tw.applied[cm.Namespace] = at
		}
		tw.mu.Unlock()
	})
	if err != nil {
		cancel()
		return nil, err
	}
	tw.done.Add(1)
	go func() {
		defer tw.done.Done()
		_ = follow()
	}()
	return tw, nil
}

// sampleEvery notes one second's counts and CPU until stop; started with
// the clock.
func (tw *tailWatch) sampleEvery(b *bench, rw *readyWatch) {
	ctx := tw.ctx
	tw.done.Add(1)
	go func() {
		defer tw.done.Done()
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			s := tailSample{at: time.Since(tw.start), cpu: b.meter.CPU(), machine: benchfig.ReadMachineCPU()}
			s.self, _ = benchfig.SelfCPU()
			rw.mu.Lock()
			s.ready = len(rw.readyAt)
			rw.mu.Unlock()
			tw.mu.Lock()
			s.created, s.offered, s.applied = len(tw.created), len(tw.offered), len(tw.applied)
			tw.samples = append(tw.samples, s)
			tw.mu.Unlock()
		}
	}()
}

// begin starts the clock and the samples.
func (tw *tailWatch) begin(b *bench, rw *readyWatch, start time.Time) {
	tw.start = start
	tw.sampleEvery(b, rw)
}

// noteCreated notes a create's return.
func (tw *tailWatch) noteCreated(name string) {
	at := time.Now()
	tw.mu.Lock()
	tw.created[name] = at
	tw.mu.Unlock()
}

// figures stops the observers and returns what they saw, from start.
func (tw *tailWatch) figures(rw *readyWatch) *tailFigures {
	tw.stop()
	tw.done.Wait()
	since := func(m map[string]time.Time) map[string]time.Duration {
		out := make(map[string]time.Duration, len(m))
		for k, at := range m {
			out[k] = at.Sub(tw.start)
		}
		return out
	}
	rw.mu.Lock()
	ready := since(rw.readyAt)
	rw.mu.Unlock()
	return &tailFigures{created: since(tw.created), offered: since(tw.offered), applied: since(tw.applied), ready: ready, samples: tw.samples}
}

// durations are a map's values, sorted.
func durations(m map[string]time.Duration) []time.Duration {
	out := make([]time.Duration, 0, len(m))
	for _, d := range m {
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// gaps are, for every name in both, to[name] − from[name].
func gaps(from, to map[string]time.Duration) []time.Duration {
	var out []time.Duration
	for k, t := range to {
		if f, ok := from[k]; ok {
			out = append(out, t-f)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// spread is "p50 / p90 / p99 / max (count)" of ds.
func spread(ds []time.Duration) string {
	if len(ds) == 0 {
		return "—"
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	s := func(d time.Duration) string { return fmt.Sprintf("%.2f", d.Seconds()) }
	return fmt.Sprintf("%s / %s / %s / %s s (%d)", s(benchfig.Percentile(ds, 50)), s(benchfig.Percentile(ds, 90)),
		s(benchfig.Percentile(ds, 99)), s(ds[len(ds)-1]), len(ds))
}

// tailSlowest is how many of the last Ready get a timeline of their own.
const tailSlowest = 8

// print writes the tail's section for a fleet of n.
func (t *tailFigures) print(out io.Writer, f *fleetFigures) {
	fmt.Fprintf(out, "N=%d: the tail, seconds from the first create: p50 / p90 / p99 / max (count)\n", f.n)
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "  created (the create returned)\t%s\n", spread(durations(t.created)))
	fmt.Fprintf(w, "  render offered on the feed\t%s\n", spread(durations(t.offered)))
	fmt.Fprintf(w, "  first object applied (its ConfigMap)\t%s\n", spread(durations(t.applied)))
	fmt.Fprintf(w, "  Ready\t%s\n", spread(durations(t.ready)))
	fmt.Fprintf(w, "  step: created → offered (render-controller)\t%s\n", spread(gaps(t.created, t.offered)))
	fmt.Fprintf(w, "  step: offered → applied (sync-controller's queue and start)\t%s\n", spread(gaps(t.offered, t.applied)))
	fmt.Fprintf(w, "  step: applied → Ready (the applies and the status write)\t%s\n", spread(gaps(t.applied, t.ready)))
	fmt.Fprintf(w, "  step: created → Ready\t%s\n", spread(gaps(t.created, t.ready)))
	if len(t.floorDone) > 0 {
		fmt.Fprintf(w, "  the floor: status write returned (from the floor's start)\t%s\n", spread(t.floorStatus))
		fmt.Fprintf(w, "  the floor: Kustomization done, its objects too\t%s\n", spread(t.floorDone))
	}
	w.Flush()

	// The slowest, each step's time.
	names := make([]string, 0, len(t.ready))
	for k := range t.ready {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool { return t.ready[names[i]] > t.ready[names[j]] })
	fmt.Fprintf(out, "N=%d: the %d last Ready: created, offered, applied, Ready (s)\n", f.n, min(tailSlowest, len(names)))
	cell := func(m map[string]time.Duration, k string) string {
		if d, ok := m[k]; ok {
			return fmt.Sprintf("%.2f", d.Seconds())
		}
		return "—"
	}
	for _, k := range names[:min(tailSlowest, len(names))] {
		fmt.Fprintf(out, "  %s: %s, %s, %s, %s\n", k, cell(t.created, k), cell(t.offered, k), cell(t.applied, k), cell(t.ready, k))
	}

	// The seconds, in up to 20 rows: the counts at each row's end and the
	// CPU each process spent in it, as a share of one core.
	if len(t.samples) > 1 {
		step := max(1, len(t.samples)/20)
		procs := append(append([]string{}, tailControllers...), benchkit.PlaneNames...)
		w = tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
		fmt.Fprintf(w, "  t (s)\tcreated\toffered\tapplied\tReady\t%s\tthe bench\tstolen by the host (CPU, cores)\n", strings.Join(procs, "\t"))
		prev := t.samples[0]
		for i := step; i < len(t.samples); i += step {
			s := t.samples[i]
			cells := []string{fmt.Sprintf("  %.0f", s.at.Seconds()), fmt.Sprint(s.created), fmt.Sprint(s.offered), fmt.Sprint(s.applied), fmt.Sprint(s.ready)}
			for _, p := range procs {
				cells = append(cells, fmt.Sprintf("%.2f", (s.cpu[p]-prev.cpu[p]).Seconds()/(s.at-prev.at).Seconds()))
			}
			cells = append(cells, fmt.Sprintf("%.2f", (s.self-prev.self).Seconds()/(s.at-prev.at).Seconds()),
				fmt.Sprintf("%.2f", (s.machine.Steal-prev.machine.Steal)/(s.at-prev.at).Seconds()))
			fmt.Fprintln(w, strings.Join(cells, "\t"))
			prev = s
		}
		w.Flush()
	}

	// The controllers' reconciles and queues during the sync.
	for _, name := range tailControllers {
		get := func(m string) benchkit.Counters { return t.after[name+" "+m].Sub(t.before[name+" "+m]) }
		var parts []string
		rec := get("controller_runtime_reconcile_total")
		for _, ctl := range []string{"kustomization"} {
			byResult := map[string]float64{}
			for set, v := range rec {
				if benchkit.Label(set, "controller") == ctl {
					byResult[benchkit.Label(set, "result")] += v
				}
			}
			for _, res := range []string{"success", "requeue", "requeue_after", "error"} {
				parts = append(parts, fmt.Sprintf("%s %.2f", res, byResult[res]/float64(f.n)))
			}
		}
		of := func(c benchkit.Counters) float64 {
			v := 0.0
			for set, x := range c {
				if benchkit.Label(set, "name") == "kustomization" {
					v += x
				}
			}
			return v
		}
		adds, retries := of(get("workqueue_adds_total")), of(get("workqueue_retries_total"))
		qs, qn, ws := of(get("workqueue_queue_duration_seconds_sum")), of(get("workqueue_queue_duration_seconds_count")), of(get("workqueue_work_duration_seconds_sum"))
		mean := func(sum, n float64) string {
			if n == 0 {
				return "—"
			}
			return fmt.Sprintf("%.2f s", sum/n)
		}
		fmt.Fprintf(out, "N=%d: %s, Kustomizations: reconciles per Kustomization by result: %s; queue adds %.2f, retries %.2f per Kustomization; mean wait in the queue %s, mean reconcile %s\n",
			f.n, name, strings.Join(parts, ", "), adds/float64(f.n), retries/float64(f.n), mean(qs, qn), mean(ws, qn))
		if steps := stepMeans(get, name); steps != "" {
			fmt.Fprintf(out, "N=%d: %s, Kustomizations: the steps of a reconcile, mean time (runs): %s\n", f.n, name, steps)
		}
	}
	fmt.Fprintln(out)
}

// stepMeans is each step's mean time and run count during the sync, in
// the order of the most time spent, from the controller's
// plumb_<subsystem>_step_duration_seconds; "" when it has none.
func stepMeans(get func(string) benchkit.Counters, controller string) string {
	subsystem := map[string]string{localenv.SyncController: "sync", localenv.RenderController: "render"}[controller]
	sums := get("plumb_" + subsystem + "_step_duration_seconds_sum")
	counts := get("plumb_" + subsystem + "_step_duration_seconds_count")
	type stepTime struct {
		name   string
		sum, n float64
	}
	var steps []stepTime
	for set, n := range counts {
		if n > 0 {
			steps = append(steps, stepTime{benchkit.Label(set, "step"), sums[set], n})
		}
	}
	sort.Slice(steps, func(i, j int) bool { return steps[i].sum > steps[j].sum })
	var parts []string
	for _, st := range steps {
		parts = append(parts, fmt.Sprintf("%s %s (%.0f)", st.name, benchfig.Seconds(time.Duration(st.sum/st.n*float64(time.Second))), st.n))
	}
	return strings.Join(parts, ", ")
}
