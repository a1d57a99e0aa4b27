package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"plumb.dev/e2e/bench/benchkit"
	"plumb.dev/e2e/localenv"
	"plumb.dev/pkg/benchfig"
)

type results struct {
	c            config
	sides        []*sideFigures
	floor        *floorFigures
	load0, load1 string
	source       string
}

// finish prints what was measured, also when an error ended the run early.
func (r *results) finish() {
	r.load1 = benchfig.LoadAvg()
	r.print(os.Stdout)
}

func (r *results) print(out io.Writer) {
	c := r.c
	fmt.Fprintf(out, "\nHelmRelease benchmark: %d HelmReleases per side of one chart (Deployment, headless Service, ConfigMap), each into its own namespace;\n", c.n)
	fmt.Fprintf(out, "one control plane (e2e/localenv), one side at a time; interval %s on both sides, drift detection enabled on both; %s\n", c.interval, r.source)
	fmt.Fprintf(out, "Plumb: source-, render-, sync- and notification-controller, chartRef to one HelmChart; Flux: %s, chartRef to one ExternalArtifact\n", fluxVersion())
	fmt.Fprintf(out, "load average at the start %s, at the end %s\n\n", r.load0, r.load1)
	if len(r.sides) == 0 {
		return
	}
	type row struct {
		name string
		get  func(f *sideFigures) (float64, bool)
		fmt  func(float64) string
	}
	secs := func(v float64) string { return benchfig.Seconds(time.Duration(v * float64(time.Second))) }
	reqs := func(v float64) string { return fmt.Sprintf("%.1f", v) }
	phaseRows := func(label string, p func(f *sideFigures) *phase) []row {
		return []row{
			{label + ": all Ready", func(f *sideFigures) (float64, bool) {
				return ok(p(f), func(p *phase) float64 { return p.all.Seconds() })
			}, secs},
			{"  median release", func(f *sideFigures) (float64, bool) {
				return ok(p(f), func(p *phase) float64 { return p.median.Seconds() })
			}, secs},
			{"  API requests per release (API server; the bench's own left out)", func(f *sideFigures) (float64, bool) {
				return ok(p(f), func(p *phase) float64 { return p.perRelease(c.n) })
			}, reqs},
			{"  sent by the side's controllers (their client-go), per release", func(f *sideFigures) (float64, bool) {
				return ok(p(f), func(p *phase) float64 {
					t := 0.0
					for _, c := range f.side.controllers {
						t += p.delta.Client[c]
					}
					return t / float64(c.n)
				})
			}, reqs},
			{"  CPU seconds, the side's controllers", func(f *sideFigures) (float64, bool) {
				return ok(p(f), func(p *phase) float64 { return cpuOf(p.delta, f.side.controllers).Seconds() })
			}, func(v float64) string { return fmt.Sprintf("%.1f s", v) }},
			{"  CPU seconds, kube-apiserver + etcd", func(f *sideFigures) (float64, bool) {
				return ok(p(f), func(p *phase) float64 { return cpuOf(p.delta, benchkit.PlaneNames).Seconds() })
			}, func(v float64) string { return fmt.Sprintf("%.1f s", v) }},
		}
	}
	var rows []row
	rows = append(rows, phaseRows("install", func(f *sideFigures) *phase { return f.install })...)
	rows = append(rows, phaseRows("upgrade (values change, rollout)", func(f *sideFigures) *phase { return f.upgrade })...)
	rows = append(rows, phaseRows("no-op reconcile of all (requestedAt)", func(f *sideFigures) *phase { return f.noop })...)
	if c.driftEdits > 0 {
		rows = append(rows,
			row{"drift: replicas edit to revert, p50", func(f *sideFigures) (float64, bool) {
				return benchfig.Percentile(f.drift, 50).Seconds(), len(f.drift) > 0
			}, secs},
			row{"drift: replicas edit to revert, max", func(f *sideFigures) (float64, bool) {
				return benchfig.Percentile(f.drift, 100).Seconds(), len(f.drift) > 0
			}, secs},
			row{fmt.Sprintf("drift: edits not reverted within %s", c.driftTimeout), func(f *sideFigures) (float64, bool) {
				return float64(f.driftMissed), f.driftEdits > 0
			}, func(v float64) string { return fmt.Sprintf("%.0f", v) }},
		)
	}
	mib := func(v float64) string { return fmt.Sprintf("%.0f MiB", v) }
	// The fair figure (benchkit.MemSampler): a controller's workers are
	// counted with it, each shared page once.
	pss := func(f *sideFigures, names []string) (float64, bool) {
		if f.mem == nil || f.mem.Samples() == 0 {
			return 0, false
		}
		kib, _ := f.mem.Peak(names...)
		return float64(kib) / 1024, true
	}
	rows = append(rows,
		row{fmt.Sprintf("peak memory (Pss, controllers + their workers, sampled every %s), together", c.memEvery), func(f *sideFigures) (float64, bool) {
			return pss(f, f.side.controllers)
		}, mib},
		row{"  the release's work alone (Plumb: render- + sync-controller)", func(f *sideFigures) (float64, bool) {
			return pss(f, releaseWork(f.side))
		}, mib},
	)
	for _, p := range append(append([]string(nil), plumbSide.controllers...), fluxSide.controllers...) {
		rows = append(rows, row{"  " + p + " (with its workers)", func(f *sideFigures) (float64, bool) {
			v, has := pss(f, []string{p})
			return v, has && slices.Contains(f.side.controllers, p)
		}, mib})
	}
	rows = append(rows, row{"  render-controller's workers: the largest VmHWM of one", func(f *sideFigures) (float64, bool) {
		if f.mem == nil || !slices.Contains(f.side.controllers, "render-controller") {
			return 0, false
		}
		return float64(f.mem.WorkerHWM("render-controller")) / 1024, true
	}, mib})
	rows = append(rows, row{"CPU seconds over the side, the release's work with its workers (sampled)", func(f *sideFigures) (float64, bool) {
		if f.mem == nil || f.mem.Samples() == 0 {
			return 0, false
		}
		var t time.Duration
		for _, p := range releaseWork(f.side) {
			t += f.mem.CPU(p)
		}
		return t.Seconds(), true
	}, func(v float64) string { return fmt.Sprintf("%.1f s", v) }})
	rows = append(rows,
		row{"peak memory (VmHWM), the side's controllers together", func(f *sideFigures) (float64, bool) {
			var kib int64
			for _, p := range f.side.controllers {
				kib += f.hwm[p]
			}
			return float64(kib) / 1024, f.hwm != nil
		}, func(v float64) string { return fmt.Sprintf("%.0f MiB", v) }},
	)
	// Flux's side has no source-controller (the bench serves its chart) and
	// sends no notifications: what helm-controller does, Plumb's render-
	// and sync-controller do.
	rows = append(rows, row{"  the release's work alone (Plumb: render- + sync-controller)", func(f *sideFigures) (float64, bool) {
		var kib int64
		for _, p := range releaseWork(f.side) {
			kib += f.hwm[p]
		}
		return float64(kib) / 1024, f.hwm != nil
	}, func(v float64) string { return fmt.Sprintf("%.0f MiB", v) }})
	for _, p := range append(append([]string(nil), plumbSide.controllers...), fluxSide.controllers...) {
		rows = append(rows, row{"  " + p, func(f *sideFigures) (float64, bool) {
			v, has := f.hwm[p]
			return float64(v) / 1024, has && slices.Contains(f.side.controllers, p)
		}, func(v float64) string { return fmt.Sprintf("%.0f MiB", v) }})
	}
	rows = append(rows, row{"load average before the side", nil, nil})

	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	header := []string{"figure"}
	for _, f := range r.sides {
		header = append(header, f.side.name)
	}
	if len(r.sides) == 2 {
		header = append(header, r.sides[0].side.name+" / "+r.sides[1].side.name)
	}
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	dashes := make([]string, len(header))
	for i, h := range header {
		dashes[i] = strings.Repeat("-", min(len([]rune(h)), 12))
	}
	fmt.Fprintln(tw, strings.Join(dashes, "\t"))
	for _, rw := range rows {
		cells := []string{rw.name}
		if rw.get == nil {
			for _, f := range r.sides {
				cells = append(cells, f.load)
			}
			fmt.Fprintln(tw, strings.Join(cells, "\t"))
			continue
		}
		var vals []float64
		var has []bool
		for _, f := range r.sides {
			v, h := rw.get(f)
			vals, has = append(vals, v), append(has, h)
			if h {
				cells = append(cells, rw.fmt(v))
			} else {
				cells = append(cells, "—")
			}
		}
		if len(r.sides) == 2 {
			if has[0] && has[1] && vals[1] != 0 {
				cells = append(cells, fmt.Sprintf("%.2f", vals[0]/vals[1]))
			} else {
				cells = append(cells, "—")
			}
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	tw.Flush()
	fmt.Fprintln(out)
	for _, f := range r.sides {
		if f.mem == nil || f.mem.Samples() == 0 {
			continue
		}
		kib, at := f.mem.Peak(releaseWork(f.side)...)
		var parts []string
		for _, p := range releaseWork(f.side) {
			m := at[p]
			parts = append(parts, fmt.Sprintf("%s %.0f MiB itself + %d workers %.0f MiB (%.0f MiB of it anonymous)", p, float64(m.Self)/1024, m.Workers, float64(m.PSS-m.Self)/1024, float64(m.Anon)/1024))
		}
		fmt.Fprintf(out, "%s: at the peak of the release's work (%.0f MiB Pss, of %d samples): %s\n", f.side.name, float64(kib)/1024, f.mem.Samples(), strings.Join(parts, "; "))
	}
	fmt.Fprintln(out)
	if r.floor != nil {
		fmt.Fprintf(out, "floor: the same %d objects (3 per release) by a bare server-side-apply loop, %d workers, no wait for rollouts: %s, %.1f API requests per release; load average before %s\n",
			3*c.n, c.bareWorkers, benchfig.Seconds(r.floor.took), r.floor.delta.ResourceRequests()/float64(c.n), r.floor.load)
		for _, f := range r.sides {
			if f.install != nil {
				fmt.Fprintf(out, "  %s's install / floor: %.1f×\n", f.side.name, f.install.all.Seconds()/r.floor.took.Seconds())
			}
		}
		fmt.Fprintln(out)
	}
	for _, f := range r.sides {
		for _, p := range []struct {
			name string
			p    *phase
		}{{"install", f.install}, {"upgrade", f.upgrade}, {"no-op", f.noop}} {
			if p.p != nil {
				fmt.Fprintf(out, "%s, %s: requests by kind per release (the bench's own included): %s\n", f.side.name, p.name,
					benchkit.TopKinds(p.p.delta.APIServer.ByKind(), 10, float64(c.n)))
			}
		}
	}
	fmt.Fprintln(out)
}

// releaseWork are the side's processes that do what helm-controller does:
// Flux's side has no source-controller (the bench serves its chart) and
// sends no notifications, so Plumb's render- and sync-controller are
// compared with helm-controller.
func releaseWork(s *side) []string {
	var out []string
	for _, p := range s.controllers {
		if p != "source-controller" && p != "notification-controller" {
			out = append(out, p)
		}
	}
	return out
}

func ok(p *phase, get func(*phase) float64) (float64, bool) {
	if p == nil {
		return 0, false
	}
	return get(p), true
}

func cpuOf(d benchkit.Delta, procs []string) time.Duration {
	var t time.Duration
	for _, p := range procs {
		t += d.CPU[p]
	}
	return t
}

// fluxVersion reads the versions hack/helm-controller.sh recorded with
// the CRDs.
func fluxVersion() string {
	root, err := localenv.RepoRoot()
	if err != nil {
		return "?"
	}
	data, err := os.ReadFile(root + "/bin/helm-controller-crds/VERSIONS")
	if err != nil {
		return "?"
	}
	return strings.ReplaceAll(strings.TrimSpace(string(data)), "\n", ", ")
}
