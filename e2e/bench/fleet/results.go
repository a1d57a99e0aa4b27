package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"plumb.dev/e2e/bench/benchkit"
	"plumb.dev/e2e/localenv"
	"plumb.dev/pkg/benchfig"
)

// The targets of issue 20 on a 2-core machine.
const (
	targetN           = 1000
	targetAllReady    = 25 * time.Second
	targetBareRatio   = 3.0
	targetMemoryKiB   = 150 * 1024
	targetDriftP50    = 200 * time.Millisecond
	targetDriftP99    = 500 * time.Millisecond
	targetSingleRatio = 1.3
	// targetShapeRatio is issue 46's target for the shapes kustomize acts
	// on (single.go).
	targetShapeRatio    = 1.5
	targetRestAllowance = "≤ the intervals' due reconciles"
)

type results struct {
	c            config
	fleets       []*fleetFigures
	single       []singleRun
	ha           []*haFigures
	restarts     []*restartFigures
	soak         *soakRun
	outage       *outageFigures
	load0, load1 string
	// cpu0 and cpu1: the machine's CPU time before and after, for the
	// share the host stole.
	cpu0, cpu1 benchfig.MachineCPU
	source     string
}

// row is one line of the table: a value per N, how it grows, the target
// and whether every N meets it.
type row struct {
	name   string
	values []float64 // per N, in the unit format prints
	format func(float64) string
	target string
	ok     func(f *fleetFigures, v float64) (bool, bool) // (meets, applies)
}

// finish prints what was measured, also when err ended the run early,
// and returns err.
func (r *results) finish(err error) error {
	r.load1, r.cpu1 = benchfig.LoadAvg(), benchfig.ReadMachineCPU()
	r.print(os.Stdout)
	return err
}

// writeHeader writes a table's header and a line of dashes under it.
func writeHeader(tw io.Writer, header []string) {
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	dashes := make([]string, len(header))
	for i, h := range header {
		dashes[i] = strings.Repeat("-", min(len([]rune(h)), 12))
	}
	fmt.Fprintln(tw, strings.Join(dashes, "\t"))
}

func (r *results) print(out io.Writer) {
	c := r.c
	fmt.Fprintf(out, "\nfleet benchmark: N Kustomizations of 4 objects (ConfigMap, Secret, headless Service, ServiceAccount), each in its own namespace,\n")
	fmt.Fprintf(out, "from %d GitRepositories on the local Git server (%s layout), created at once; the four controllers as processes (e2e/localenv); %s\n",
		c.repos, c.layout, r.source)
	concurrent := "their default --concurrent"
	if c.concurrent > 0 {
		concurrent = fmt.Sprintf("--concurrent=%d", c.concurrent)
	}
	for _, name := range localenv.ControllerNames {
		if args := c.controllerArgs[name]; len(args) > 0 {
			concurrent += fmt.Sprintf(", %s %s", name, strings.Join(args, " "))
		}
	}
	cpus := "every process on every CPU"
	if c.planeCPUs != nil {
		cpus = fmt.Sprintf("kube-apiserver, etcd and kube-controller-manager on CPUs %s, the controllers, their workers and the bench on CPUs %s (-control-plane-cpus)", c.planeCPUs, c.plumbCPUs)
	}
	fmt.Fprintf(out, "controllers with %s; Kustomization interval %s, GitRepository interval %s, bare loop %d workers (sync-controller's --apply-concurrency)\n%s\nload average before %s, after %s; CPU time of the run %s by the host\n\n",
		concurrent, c.ksInterval, c.sourceInterval, c.workers, cpus, r.load0, r.load1, r.cpu1.StealSince(r.cpu0))
	if single := r.unsharded(); len(single) > 0 {
		r.printFleet(out, single)
	}
	if len(r.c.shards) > 1 || r.c.shards[0] > 1 {
		r.printShards(out)
	}
	if r.ha != nil {
		r.printHA(out)
	}
	if r.restarts != nil {
		r.printRestarts(out)
	}
	if r.outage != nil {
		r.printOutage(out)
	}
	if r.soak != nil && len(r.soak.minutes) > 0 {
		r.soak.print(out)
	}
	if len(r.single) > 0 {
		r.printSingle(out)
	}
}

// unsharded are the fleets run with one instance of each controller.
func (r *results) unsharded() []*fleetFigures {
	var out []*fleetFigures
	for _, f := range r.fleets {
		if f.shards == 1 {
			out = append(out, f)
		}
	}
	return out
}

func (r *results) printFleet(out io.Writer, fs []*fleetFigures) {
	var rows []row
	val := func(get func(f *fleetFigures) float64) []float64 {
		v := make([]float64, len(fs))
		for i, f := range fs {
			v[i] = get(f)
		}
		return v
	}
	secs := func(v float64) string { return fmt.Sprintf("%.2f s", v) }
	rows = append(rows,
		row{name: "all Ready (from the first create)", values: val(func(f *fleetFigures) float64 { return f.allReady.Seconds() }), format: secs,
			target: "1,000 ≤ 25 s", ok: func(f *fleetFigures, v float64) (bool, bool) {
				return v <= targetAllReady.Seconds(), f.n == targetN
			}},
		row{name: "  median Kustomization Ready", values: val(func(f *fleetFigures) float64 { return f.median.Seconds() }), format: secs},
		row{name: "  all rendered (render-controller's artifact in status)", values: val(func(f *fleetFigures) float64 { return f.allRendered.Seconds() }), format: secs},
		row{name: "  median Kustomization rendered", values: val(func(f *fleetFigures) float64 { return f.medianRendered.Seconds() }), format: secs},
		row{name: "bare SSA loop over the same 4·N objects", values: val(func(f *fleetFigures) float64 { return f.bare.Seconds() }), format: secs},
		row{name: "all Ready / bare loop", values: val(func(f *fleetFigures) float64 { return f.allReady.Seconds() / f.bare.Seconds() }),
			format: func(v float64) string { return fmt.Sprintf("%.1f×", v) }, target: "≤ 3×",
			ok: func(_ *fleetFigures, v float64) (bool, bool) { return v <= targetBareRatio, true }},
	)
	if r.c.floor {
		rows = append(rows,
			row{name: "floor: creates, 1 status write each, objects; no controller", values: val(func(f *fleetFigures) float64 { return f.floor.Seconds() }), format: secs},
			row{name: "  floor / bare loop", values: val(func(f *fleetFigures) float64 { return f.floor.Seconds() / f.bare.Seconds() }),
				format: func(v float64) string { return fmt.Sprintf("%.1f×", v) }},
			row{name: "  all Ready / floor", values: val(func(f *fleetFigures) float64 { return f.allReady.Seconds() / f.floor.Seconds() }),
				format: func(v float64) string { return fmt.Sprintf("%.1f×", v) }},
			row{name: "  CPU seconds of the floor, kube-apiserver + etcd", values: val(func(f *fleetFigures) float64 {
				return (f.floorDelta.CPU["kube-apiserver"] + f.floorDelta.CPU["etcd"]).Seconds()
			}), format: func(v float64) string { return fmt.Sprintf("%.1f s", v) }},
		)
	}
	rows = append(rows,
		// The bench's own creates of the Kustomizations are taken out.
		row{name: "API requests per Kustomization (API server)", values: val(func(f *fleetFigures) float64 {
			return (f.sync.ResourceRequests() - float64(f.n)) / float64(f.n)
		}), format: func(v float64) string { return fmt.Sprintf("%.1f", v) }, target: "grows linearly"},
		row{name: "  bare loop, per Kustomization", values: val(func(f *fleetFigures) float64 { return f.bareReqs / float64(f.n) }),
			format: func(v float64) string { return fmt.Sprintf("%.1f", v) }},
	)
	for _, name := range localenv.ControllerNames {
		rows = append(rows, row{name: "  sent by " + name, values: val(func(f *fleetFigures) float64 { return f.sync.Client[name] / float64(f.n) }),
			format: func(v float64) string { return fmt.Sprintf("%.1f", v) }})
	}
	for _, name := range localenv.ControllerNames {
		rows = append(rows, row{name: "peak memory (VmHWM), " + name, values: val(func(f *fleetFigures) float64 { return float64(f.sync.HWM[name]) / 1024 }),
			format: func(v float64) string { return fmt.Sprintf("%.0f MiB", v) }, target: "≤ 150 MiB",
			ok: func(_ *fleetFigures, v float64) (bool, bool) { return v*1024 <= targetMemoryKiB, true }})
	}
	for _, name := range localenv.ControllerNames {
		rows = append(rows, row{name: "CPU seconds to all Ready, " + name, values: val(func(f *fleetFigures) float64 { return f.sync.CPU[name].Seconds() }),
			format: func(v float64) string { return fmt.Sprintf("%.1f s", v) }})
	}
	for _, name := range benchkit.PlaneNames {
		rows = append(rows, row{name: "CPU seconds to all Ready, " + name, values: val(func(f *fleetFigures) float64 { return f.sync.CPU[name].Seconds() }),
			format: func(v float64) string { return fmt.Sprintf("%.1f s", v) }})
	}
	rows = append(rows,
		row{name: "  the same during the bare loop, kube-apiserver + etcd", values: val(func(f *fleetFigures) float64 {
			return (f.bareDelta.CPU["kube-apiserver"] + f.bareDelta.CPU["etcd"]).Seconds()
		}), format: func(v float64) string { return fmt.Sprintf("%.1f s", v) }},
		row{name: "at rest: API requests per minute", values: val(func(f *fleetFigures) float64 { return f.rest.ResourceRequests() / f.rest.D.Minutes() }),
			format: func(v float64) string { return fmt.Sprintf("%.0f", v) }, target: targetRestAllowance,
			ok: func(f *fleetFigures, v float64) (bool, bool) { return v <= r.restAllowance(f), true }},
		row{name: "  allowed by the intervals (per minute)", values: val(func(f *fleetFigures) float64 { return r.restAllowance(f) }),
			format: func(v float64) string { return fmt.Sprintf("%.0f", v) }},
	)
	if r.c.driftEdits > 0 {
		ms := func(v float64) string { return fmt.Sprintf("%.3f s", v) }
		rows = append(rows,
			row{name: "drift: edit to revert p50", values: val(func(f *fleetFigures) float64 { return benchfig.Percentile(f.drift, 50).Seconds() }), format: ms,
				target: "≤ 0.2 s", ok: func(_ *fleetFigures, v float64) (bool, bool) { return v <= targetDriftP50.Seconds(), true }},
			row{name: "drift: edit to revert p99", values: val(func(f *fleetFigures) float64 { return benchfig.Percentile(f.drift, 99).Seconds() }), format: ms,
				target: "≤ 0.5 s", ok: func(_ *fleetFigures, v float64) (bool, bool) { return v <= targetDriftP99.Seconds(), true }},
			row{name: "drift: edits missed", values: val(func(f *fleetFigures) float64 { return float64(f.driftMiss) }),
				format: func(v float64) string { return fmt.Sprintf("%.0f", v) }, target: "none",
				ok: func(_ *fleetFigures, v float64) (bool, bool) { return v == 0, true }},
		)
	}

	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	header := []string{"figure"}
	for _, f := range fs {
		header = append(header, fmt.Sprintf("N=%d", f.n))
	}
	header = append(header, "growth"+nGrowth(fs), "target", "verdict")
	writeHeader(tw, header)
	for _, rw := range rows {
		cells := []string{rw.name}
		for _, v := range rw.values {
			cells = append(cells, rw.format(v))
		}
		cells = append(cells, growth(rw.values), rw.target, verdict(fs, rw))
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	tw.Flush()
	fmt.Fprintln(out)
	for _, f := range fs {
		fmt.Fprintf(out, "N=%d: requests by kind per Kustomization (API server, the bench's creates included): %s\n", f.n,
			benchkit.TopKinds(f.sync.APIServer.ByKind(), 10, float64(f.n)))
		fmt.Fprintf(out, "N=%d: at rest, requests by kind in %s: %s; load average after: %s\n", f.n, benchfig.Round(f.rest.D),
			orNone(benchkit.TopKinds(f.rest.APIServer.ByKind(), 8, 0)), f.load)
	}
	fmt.Fprintln(out)
	for _, f := range fs {
		if f.tail != nil {
			f.tail.print(out, f)
		}
	}
}

// restAllowance is what the configured intervals allow at rest per
// minute: every Kustomization and GitRepository reconciled once per
// interval, each reconcile costing what a Kustomization cost on its first
// sync (an upper bound: a no-op reconcile writes less).
func (r *results) restAllowance(f *fleetFigures) float64 {
	perKs := (f.sync.ResourceRequests() - float64(f.n)) / float64(f.n)
	return (float64(f.n)/r.c.ksInterval.Minutes() + float64(r.c.repos)/r.c.sourceInterval.Minutes()) * perKs
}

func verdict(fs []*fleetFigures, rw row) string {
	if rw.ok == nil {
		return ""
	}
	applies, meets := false, true
	for i, f := range fs {
		ok, app := rw.ok(f, rw.values[i])
		if app {
			applies = true
			meets = meets && ok
		}
	}
	if !applies {
		return fmt.Sprintf("(N=%d not run)", targetN)
	}
	if meets {
		return "meets"
	}
	return "misses"
}

// nGrowth says how N grows from column to column.
func nGrowth(fs []*fleetFigures) string {
	if len(fs) < 2 {
		return ""
	}
	var parts []string
	for i := 1; i < len(fs); i++ {
		parts = append(parts, fmt.Sprintf("×%.3g", float64(fs[i].n)/float64(fs[i-1].n)))
	}
	return " (N " + strings.Join(parts, ", ") + ")"
}

// growth is each value over the one before it.
func growth(v []float64) string {
	if len(v) < 2 {
		return "—"
	}
	var parts []string
	for i := 1; i < len(v); i++ {
		if v[i-1] == 0 {
			parts = append(parts, "—")
			continue
		}
		parts = append(parts, fmt.Sprintf("×%.2f", v[i]/v[i-1]))
	}
	return strings.Join(parts, ", ")
}

// printSingle prints the single Kustomization's medians, one block of
// rows per shape, each against the bare loop of its own runs.
func (r *results) printSingle(out io.Writer) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "one Kustomization of %d objects (medians of %d new commits)\tPlumb\tbare SSA loop\tratio\ttarget\tverdict\n", r.c.singleObjects, r.c.singleRuns)
	fmt.Fprintf(tw, "------\t-----\t-------------\t-----\t------\t-------\n")
	for _, shape := range r.c.singleShapes {
		var pushed, fromSource, render, bare []time.Duration
		for _, s := range r.single {
			if s.shape == shape {
				pushed, fromSource, bare = append(pushed, s.pushed), append(fromSource, s.fromSource), append(bare, s.bare)
				render = append(render, s.render)
			}
		}
		if len(pushed) == 0 {
			continue
		}
		p, s, b, rd := benchfig.Percentile(pushed, 50), benchfig.Percentile(fromSource, 50), benchfig.Percentile(bare, 50), benchfig.Percentile(render, 50)
		target := shape.target()
		fmt.Fprintf(tw, "%s: new source artifact → Ready (render-controller in the loop)\t%s\t%s (%d workers)\t%.2f×\t≤ %.1f×\t%s\n",
			shape, benchfig.Seconds(s), benchfig.Seconds(b), r.c.workers, s.Seconds()/b.Seconds(), target, verdictOf(s.Seconds() <= target*b.Seconds()))
		fmt.Fprintf(tw, "  of which: new source artifact → rendered artifact in the status\t%s\t\t\t\t\n", benchfig.Seconds(rd))
		fmt.Fprintf(tw, "  push → Ready (source-controller's fetch too)\t%s\t%s\t%.2f×\t\t\n", benchfig.Seconds(p), benchfig.Seconds(b), p.Seconds()/b.Seconds())
	}
	tw.Flush()
	fmt.Fprintln(out)
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func verdictOf(ok bool) string {
	if ok {
		return "meets"
	}
	return "misses"
}
