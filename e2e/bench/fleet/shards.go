package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"plumb.dev/e2e/bench/benchkit"
	"plumb.dev/e2e/localenv"
)

// mainShard names the instance without a shard key: the whole fleet with
// one shard, nothing of it with several.
const mainShard = "main"

// processShard splits a process name of localenv (ShardName, perhaps
// with the standby suffix) into its controller and shard.
func processShard(name string) (controller, shard string) {
	name = strings.TrimSuffix(name, localenv.StandbySuffix)
	for _, c := range localenv.ControllerNames {
		if name == c {
			return c, mainShard
		}
		if rest, ok := strings.CutPrefix(name, c+"-"); ok {
			return c, rest
		}
	}
	return name, mainShard
}

// shardFigures are one shard's share of one fleet run.
type shardFigures struct {
	kustomizations int
	lastReady      time.Duration
	requests       float64 // sent by the shard's controllers
}

// perShard splits a fleet's Ready times and its controllers' requests by
// shard, as the Kustomizations were labelled (shardOf).
func (f *fleetFigures) perShard() map[string]*shardFigures {
	out := map[string]*shardFigures{}
	get := func(shard string) *shardFigures {
		if out[shard] == nil {
			out[shard] = &shardFigures{}
		}
		return out[shard]
	}
	for i := range f.n {
		shard := shardOf(i, f.shards)
		if shard == "" {
			shard = mainShard
		}
		s := get(shard)
		s.kustomizations++
		s.lastReady = max(s.lastReady, f.readyAt[appName(i)])
	}
	for name, v := range f.sync.Client {
		_, shard := processShard(name)
		get(shard).requests += v
	}
	return out
}

// printShards prints the fleets side by side by shard count: time to all
// Ready and throughput in all and per shard, requests per shard, and
// memory and CPU per process.
func (r *results) printShards(out io.Writer) {
	fs := slices.Clone(r.fleets)
	sort.SliceStable(fs, func(i, j int) bool { return fs[i].n < fs[j].n })
	var shardNames, procs []string
	for _, f := range fs {
		for s := range f.perShard() {
			if !slices.Contains(shardNames, s) {
				shardNames = append(shardNames, s)
			}
		}
		for p := range f.sync.HWM {
			if !slices.Contains(procs, p) && !slices.Contains(benchkit.PlaneNames, p) {
				procs = append(procs, p)
			}
		}
	}
	sort.Strings(shardNames) // main, shard1, shard2 …
	sort.Slice(procs, func(i, j int) bool {
		ci, si := processShard(procs[i])
		cj, sj := processShard(procs[j])
		if si != sj {
			return si < sj
		}
		if ci != cj {
			return slices.Index(localenv.ControllerNames, ci) < slices.Index(localenv.ControllerNames, cj)
		}
		return procs[i] < procs[j]
	})

	type line struct {
		name  string
		value func(f *fleetFigures) float64 // NaN: not in this run
		unit  string
	}
	nan := math.NaN()
	lines := []line{
		{"all Ready (from the first create)", func(f *fleetFigures) float64 { return f.allReady.Seconds() }, "%.2f s"},
		{"  median Kustomization Ready", func(f *fleetFigures) float64 { return f.median.Seconds() }, "%.2f s"},
		{"throughput, all shards (Kustomizations Ready per second)", func(f *fleetFigures) float64 { return float64(f.n) / f.allReady.Seconds() }, "%.2f/s"},
	}
	for _, s := range shardNames {
		lines = append(lines,
			line{"  " + s + ": Kustomizations", func(f *fleetFigures) float64 {
				if sf := f.perShard()[s]; sf != nil && sf.kustomizations > 0 {
					return float64(sf.kustomizations)
				}
				return nan
			}, "%.0f"},
			line{"  " + s + ": all its Kustomizations Ready", func(f *fleetFigures) float64 {
				if sf := f.perShard()[s]; sf != nil && sf.kustomizations > 0 {
					return sf.lastReady.Seconds()
				}
				return nan
			}, "%.2f s"},
			line{"  " + s + ": throughput (Ready per second)", func(f *fleetFigures) float64 {
				if sf := f.perShard()[s]; sf != nil && sf.kustomizations > 0 {
					return float64(sf.kustomizations) / sf.lastReady.Seconds()
				}
				return nan
			}, "%.2f/s"},
		)
	}
	lines = append(lines, line{"API requests per Kustomization (API server)", func(f *fleetFigures) float64 {
		return (f.sync.ResourceRequests() - float64(f.n)) / float64(f.n)
	}, "%.1f"})
	for _, s := range shardNames {
		lines = append(lines, line{"  requests sent by " + s + "'s controllers", func(f *fleetFigures) float64 {
			if sf := f.perShard()[s]; sf != nil {
				return sf.requests
			}
			return nan
		}, "%.0f"})
	}
	for _, p := range procs {
		lines = append(lines, line{"peak memory (VmHWM), " + p, func(f *fleetFigures) float64 {
			if v, ok := f.sync.HWM[p]; ok {
				return float64(v) / 1024
			}
			return nan
		}, "%.0f MiB"})
	}
	lines = append(lines, line{"peak memory, sum over the controllers", func(f *fleetFigures) float64 {
		t := 0.0
		for _, p := range procs {
			t += float64(f.sync.HWM[p]) / 1024
		}
		return t
	}, "%.0f MiB"})
	for _, p := range append(slices.Clone(procs), benchkit.PlaneNames...) {
		lines = append(lines, line{"CPU seconds to all Ready, " + p, func(f *fleetFigures) float64 {
			if v, ok := f.sync.CPU[p]; ok {
				return v.Seconds()
			}
			return nan
		}, "%.1f s"})
	}
	lines = append(lines, line{"CPU seconds, sum over the controllers", func(f *fleetFigures) float64 {
		t := 0.0
		for _, p := range procs {
			t += f.sync.CPU[p].Seconds()
		}
		return t
	}, "%.1f s"})

	fmt.Fprintf(out, "shards: the same N with 1 and with several shards (each shard one process of each controller, the main instance beside them with no Kustomization)\n")
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	header := []string{"figure"}
	for _, f := range fs {
		header = append(header, fmt.Sprintf("N=%d, %d shard%s", f.n, f.shards, plural(f.shards)))
	}
	writeHeader(tw, header)
	for _, l := range lines {
		cells := []string{l.name}
		for _, f := range fs {
			v := l.value(f)
			if math.IsNaN(v) {
				cells = append(cells, "—")
				continue
			}
			cells = append(cells, fmt.Sprintf(l.unit, v))
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	tw.Flush()
	fmt.Fprintln(out)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
