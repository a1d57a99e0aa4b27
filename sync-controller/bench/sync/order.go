package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/procfs"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"plumb.dev/pkg/benchfig"
	"plumb.dev/pkg/plan"
)

// bareOrder is an order in which the bare loop applies the mixed
// workload's objects (-bare-order-runs): whether the bare loop of a figure
// is fair depends on it, and sync-controller's kind groups cost what the
// last one adds.
type bareOrder string

const (
	// orderStream is the order of the generated stream: ConfigMap,
	// Service, Deployment, ConfigMap… (the unshaped bare loop's before
	// the objects were sorted).
	orderStream bareOrder = "stream order (kinds interleaved)"
	// orderCanonical is pkg/object's order, the order of every render's
	// output and of sync-controller's applies: all ConfigMaps, then the
	// Services, then the Deployments, all in flight together.
	orderCanonical bareOrder = "canonical order (kind by kind)"
	// orderKindGroups is the canonical order with sync-controller's
	// barrier: each kind's objects all applied before the next kind's
	// start (plan.KindGroups, as runWave applies them).
	orderKindGroups bareOrder = "canonical order, one kind group after another"
)

var bareOrders = []bareOrder{orderStream, orderCanonical, orderKindGroups}

// orderFigures are the bare loop's runs in each order, with the CPU the
// API server and etcd spent on each.
type orderFigures struct {
	d, cpu map[bareOrder][]time.Duration
}

// bareOrderPhase times the bare loop of the mixed workload in each order,
// the orders rotating run by run, each on a fresh namespace. It runs
// before the in-process controller starts, so the API server serves the
// bare loop alone and the CPU of its processes is the loop's.
func (b *bench) bareOrderPhase(ctx context.Context, runs int) error {
	fig := &orderFigures{d: map[bareOrder][]time.Duration{}, cpu: map[bareOrder][]time.Duration{}}
	b.res.orders = fig
	for r := range runs {
		for i := range bareOrders {
			order := bareOrders[(i+r)%len(bareOrders)]
			ns, err := b.env.Namespace(ctx, "bench-order")
			if err != nil {
				return err
			}
			objs, err := bareObjects(mixed, ns, b.c.objects)
			if err != nil {
				return err
			}
			if order == orderStream {
				objs = streamOrder(objs)
			}
			if err := b.quiesce(ctx); err != nil {
				return err
			}
			cpu0, err := childrenCPU()
			if err != nil {
				return err
			}
			start := time.Now()
			if order == orderKindGroups {
				for _, group := range plan.KindGroups(objs) {
					if err = b.applyAll(ctx, group, b.c.controller.applyConcurrency); err != nil {
						break
					}
				}
			} else {
				err = b.applyAll(ctx, objs, b.c.controller.applyConcurrency)
			}
			elapsed := time.Since(start)
			if err != nil {
				return fmt.Errorf("bare loop in %s: %w", order, err)
			}
			// The API server finishes what a request set off (its watch
			// cache, etcd's compaction of the batch) a moment later.
			time.Sleep(settle)
			cpu1, err := childrenCPU()
			if err != nil {
				return err
			}
			fig.d[order] = append(fig.d[order], elapsed)
			fig.cpu[order] = append(fig.cpu[order], cpu1-cpu0)
			fmt.Fprintf(os.Stderr, "   bare loop (%d workers), %s, %s: %s, API server and etcd CPU %s\n", b.c.controller.applyConcurrency,
				mixed.describe(b.c.objects), order, benchfig.Round(elapsed), benchfig.Round(cpu1-cpu0))
		}
	}
	return nil
}

// streamOrder puts objects sorted by canonical order back into the order
// of the generated stream (manifests): by their index, the number in
// their name.
func streamOrder(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	out := append([]*unstructured.Unstructured(nil), objs...)
	index := func(o *unstructured.Unstructured) string {
		return o.GetName()[strings.LastIndexByte(o.GetName(), '-')+1:]
	}
	sort.SliceStable(out, func(i, j int) bool { return index(out[i]) < index(out[j]) })
	return out
}

// childrenCPU is the user and system CPU time of this process's children
// (kube-apiserver and etcd, started by pkg/testenv), from /proc.
func childrenCPU() (time.Duration, error) {
	return processCPU(func(pid, ppid int) bool { return ppid == os.Getpid() })
}

// processCPU is the user and system CPU time of the processes that take
// says, from /proc.
func processCPU(take func(pid, ppid int) bool) (time.Duration, error) {
	procs, err := procfs.AllProcs()
	if err != nil {
		return 0, err
	}
	var ticks int64
	for _, p := range procs {
		stat, err := p.Stat()
		if err != nil {
			continue // gone since the listing
		}
		if take(p.PID, stat.PPID) {
			ticks += int64(stat.UTime) + int64(stat.STime)
		}
	}
	// Clock ticks are USER_HZ, 100 on Linux.
	return time.Duration(ticks) * 10 * time.Millisecond, nil
}

// print writes the medians of each order beside the canonical one's.
func (f *orderFigures) print(out io.Writer, c config) {
	if f == nil {
		return
	}
	med := func(ds []time.Duration) time.Duration {
		s := append([]time.Duration(nil), ds...)
		sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
		return s[(len(s)-1)/2]
	}
	base, baseCPU := med(f.d[orderCanonical]), med(f.cpu[orderCanonical])
	fmt.Fprintf(out, "\nthe bare loop's order, %s, %d workers, medians of %d runs (API server and etcd CPU beside the wall time):\n",
		mixed.describe(c.objects), c.controller.applyConcurrency, len(f.d[orderCanonical]))
	for _, o := range bareOrders {
		d, cpu := med(f.d[o]), med(f.cpu[o])
		fmt.Fprintf(out, "- %s: %s (%s), CPU %s (%s); runs %s\n", o, benchfig.Seconds(d), ratio(d, base),
			benchfig.Seconds(cpu), ratio(cpu, baseCPU), roundAll(f.d[o]))
	}
}

func roundAll(ds []time.Duration) string {
	s := make([]string, len(ds))
	for i, d := range ds {
		s[i] = benchfig.Round(d).String()
	}
	return strings.Join(s, " ")
}
