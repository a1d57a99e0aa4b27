package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"plumb.dev/e2e/bench/benchkit"
	"plumb.dev/e2e/localenv"
	"plumb.dev/pkg/benchfig"
)

// restarted are the controllers -restart restarts, one at a time, in this
// order.
var restarted = []string{localenv.SyncController, localenv.RenderController, localenv.SourceController}

// quiet is how long a restarted controller must send no request for the
// bench to call it steady; quietPoll is how often its counter is read.
const (
	quiet     = 3 * time.Second
	quietPoll = 250 * time.Millisecond
)

// restartFigures are the figures of one controller's restart in a fleet
// of n at rest.
type restartFigures struct {
	n          int
	controller string
	toReady    time.Duration // SIGTERM → /readyz 200
	toStop     time.Duration // SIGTERM → the old process gone: the part of toReady that is the stop
	toSteady   time.Duration // /readyz 200 → quiet
	requests   float64       // the new process's own, until steady
	apiServer  float64       // every client's resource requests, stop → steady
	byKind     string        // the same, by verb and resource
	// rewritten are the apps' objects written after the stop (the drift
	// target's foreign edit and its correction left out); hooksRerun the
	// hooks created again; prunes the apps' objects deleted.
	rewritten, hooksRerun, prunes int
	// drift: a foreign edit made the moment the new process was ready,
	// timed from readiness until the watch saw Git's value again.
	drift    time.Duration
	driftErr string
	load     string
}

func runRestarts(ctx context.Context, c config, res *results) error {
	for _, n := range c.ns {
		err := withEnv(ctx, c, envOptions{}, func(b *bench) error {
			fs, err := b.runRestarts(ctx, n)
			res.restarts = append(res.restarts, fs...)
			if err != nil {
				return fmt.Errorf("restarts at N=%d: %w", n, err)
			}
			return nil
		})
		if err != nil {
			return res.finish(err)
		}
	}
	return res.finish(nil)
}

// runRestarts makes a fleet of n Ready, lets it rest, then restarts
// sync-, render- and source-controller one at a time (SIGTERM, as a
// rollout does) and measures each restart.
func (b *bench) runRestarts(ctx context.Context, n int) ([]*restartFigures, error) {
	b.hookEvery = b.c.hookEvery
	if err := b.readyFleet(ctx, n); err != nil {
		return nil, err
	}

	var out []*restartFigures
	for i, name := range restarted {
		f, err := b.restartOne(ctx, n, name, appName((i+1)*n/(len(restarted)+1)))
		if err != nil {
			return out, fmt.Errorf("restarting %s: %w", name, err)
		}
		out = append(out, f)
	}
	return out, nil
}

// restartOne restarts one controller and measures it; target is the app
// whose ConfigMap is edited at its readiness.
func (b *bench) restartOne(ctx context.Context, n int, name, target string) (*restartFigures, error) {
	f := &restartFigures{n: n, controller: name}
	c := b.env.Controllers[name]
	ow, err := b.watchWrites(ctx)
	if err != nil {
		return nil, err
	}
	defer ow.stop()
	vw, err := b.watchConfigMaps(ctx)
	if err != nil {
		return nil, err
	}
	defer vw.stop()
	time.Sleep(settle) // the watches are open
	b.meter.Forget(name)
	before, err := b.meter.Snapshot(ctx)
	if err != nil {
		return nil, err
	}

	say(">> N=%d: restarting %s (pid %d)", n, name, c.Pid())
	stopped := time.Now()
	if err := c.Stop(30 * time.Second); err != nil {
		return nil, err
	}
	f.toStop = time.Since(stopped)
	if err := c.Restart(ctx); err != nil {
		return nil, err
	}
	ready := time.Now()
	f.toReady = ready.Sub(stopped)

	// Drift at readiness: sync-controller is the one that corrects it,
	// restarted itself or not.
	key := target + "/config"
	seen := vw.Follow(key)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "config", Namespace: target}}
	patch := fmt.Sprintf(`{"data":{%q:"foreign-after-restart"}}`, driftKey)
	if err := b.fast.Patch(ctx, cm, client.RawPatch(types.MergePatchType, []byte(patch)), client.FieldOwner("bench-intruder")); err != nil {
		vw.Unfollow(key)
		return nil, fmt.Errorf("foreign edit of %s: %w", key, err)
	}
	f.drift, err = benchfig.AwaitRevert(ctx, seen, cm.ResourceVersion, desiredValue(target), ready, 30*time.Second)
	vw.Unfollow(key)
	if err != nil {
		f.driftErr = err.Error()
	}

	// Steady: the new process sends nothing for a while.
	metrics := "http://" + c.MetricsAddr + "/metrics"
	last, quietSince := -1.0, time.Now()
	for {
		got, err := benchkit.ScrapeCounters(ctx, b.meter.APIClient, metrics, "rest_client_requests_total")
		if err != nil {
			return nil, err
		}
		now := time.Now()
		if total := got.Total(); total != last {
			last, quietSince = total, now
		} else if now.Sub(quietSince) >= quiet {
			f.requests = total
			f.toSteady = quietSince.Sub(ready)
			break
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(quietPoll):
		}
	}
	after, err := b.meter.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	d := benchkit.Diff(before, after)
	f.apiServer = d.ResourceRequests()
	f.byKind = benchkit.TopKinds(d.APIServer.ByKind(), 6, 0)
	b.meter.Add(name, benchkit.Process{MetricsURL: metrics, Pid: c.Pid})

	ow.mu.Lock()
	for k, ws := range ow.writes {
		if k == writeKey("ConfigMap", target, "config") {
			continue
		}
		for _, w := range ws {
			if !w.at.After(stopped) {
				continue
			}
			hook := strings.HasPrefix(k, hookKind+"/")
			switch {
			case hook && w.typ == watch.Added:
				f.hooksRerun++
			case hook:
				// kube-controller-manager's status writes of a Job.
			case w.typ == watch.Deleted:
				f.prunes++
			default:
				f.rewritten++
			}
		}
	}
	ow.mu.Unlock()
	f.load = benchfig.LoadAvg()
	say("   ready after %s (stopped in %s, started in %s), steady %s later: %.0f requests (%.2f per Kustomization); drift corrected %s after readiness %s",
		benchfig.Round(f.toReady), benchfig.Round(f.toStop), benchfig.Round(f.toReady-f.toStop), benchfig.Round(f.toSteady), f.requests, f.requests/float64(n), benchfig.Round(f.drift), f.driftErr)
	return f, nil
}

// printRestarts prints one row per restart.
func (r *results) printRestarts(out io.Writer) {
	fmt.Fprintf(out, "restarts: a fleet at rest; sync-, render- and source-controller each stopped with SIGTERM and started again, one at a time\n")
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	writeHeader(tw, []string{"N", "controller", "stop → ready", "ready → steady", "its requests", "per Kustomization (target ≤ 2)",
		"API server, all clients", "objects re-applied", "hooks re-run", "prunes", "drift corrected after ready (target ≤ 1 s)"})
	for _, f := range r.restarts {
		drift := fmt.Sprintf("%.2f s", f.drift.Seconds())
		if f.driftErr != "" {
			drift = f.driftErr
		}
		fmt.Fprintf(tw, "%d\t%s\t%.2f s\t%.2f s\t%.0f\t%.2f\t%.0f\t%d\t%d\t%d\t%s\n", f.n, f.controller, f.toReady.Seconds(), f.toSteady.Seconds(),
			f.requests, f.requests/float64(f.n), f.apiServer, f.rewritten, f.hooksRerun, f.prunes, drift)
	}
	tw.Flush()
	for _, f := range r.restarts {
		fmt.Fprintf(out, "N=%d %s: API server requests stop → steady by kind: %s; load average after: %s\n", f.n, f.controller, f.byKind, f.load)
	}
	fmt.Fprintln(out)
}
