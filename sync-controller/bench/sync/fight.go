package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	"github.com/nats-io/nats.go"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	"plumb.dev/pkg/benchfig"
	"plumb.dev/pkg/events"
	"plumb.dev/sync-controller/internal/controller"
)

// fightFigures are one fight: a competing writer setting a Deployment's
// spec.replicas (which Git also sets) at a fixed rate, with one foreign
// edit of a ConfigMap of the same Kustomization half-way through.
type fightFigures struct {
	window       time.Duration // sync-controller's --drift-fight-window; 0 is off
	duration     time.Duration
	foreign      int            // the competing writer's writes
	reverts      int            // sync-controller's applies of the Deployment
	dryRuns      int            // and its dry-runs of it
	events       map[string]int // events for the Kustomization by reason, during the fight and until it ended
	otherLatency time.Duration  // the ConfigMap edit made during the fight: until reverted
	otherErr     error
	settled      time.Duration // from the writer stopping until DriftContested was gone (detection on)
}

func (f fightFigures) perMinute(n int) float64 { return float64(n) / f.duration.Minutes() }

func (f fightFigures) alerts() int {
	n := 0
	for _, c := range f.events {
		n += c
	}
	return n
}

// fightPhase runs the same fight twice, each against an in-process
// sync-controller of its own: with fight detection off (the baseline: every
// foreign write is reverted and reported) and with main.go's
// --drift-fight-window.
func (b *bench) fightPhase(ctx context.Context) error {
	for _, window := range []time.Duration{0, b.c.fightWindow} {
		o := b.c.controller
		o.fightWindow = window
		counter := &requestCounter{}
		stop, err := startController(b.env.Config, b.env.NATSURL, counter, o)
		if err != nil {
			return err
		}
		f, err := b.fight(ctx, counter, window)
		stop()
		if err != nil {
			return fmt.Errorf("fight with --drift-fight-window=%s: %w", window, err)
		}
		b.res.fights = append(b.res.fights, f)
	}
	return nil
}

const fightManifests = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: %[1]s
spec:
  replicas: 1
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: app
        image: registry.example/app:1.0
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: other
  namespace: %[1]s
data:
  key: from-git
`

func (b *bench) fight(ctx context.Context, counter *requestCounter, window time.Duration) (fightFigures, error) {
	f := fightFigures{window: window, duration: b.c.fightDuration, events: map[string]int{}}
	ns, err := b.env.Namespace(ctx, "bench-fight")
	if err != nil {
		return f, err
	}
	ks := newKustomization(ns)
	// The backoff is capped at the interval: the demo's 10 minutes.
	ks.Spec.Interval = metav1.Duration{Duration: 10 * time.Minute}
	if err := b.wc.Create(ctx, ks); err != nil {
		return f, err
	}
	kw, err := watchKustomization(ctx, b.wc, client.ObjectKeyFromObject(ks))
	if err != nil {
		return f, err
	}
	defer kw.stop()
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if _, _, err := kw.until(wctx, func(k *kustomizev1.Kustomization) bool {
		return controllerutil.ContainsFinalizer(k, controller.Finalizer) && conditions.Has(k, meta.ReadyCondition)
	}); err != nil {
		return f, err
	}
	b.runID++
	revision := fmt.Sprintf("main@sha1:%040x", b.runID)
	if err := b.art.render(ctx, b.wc, ks, revision, fmt.Sprintf(fightManifests, ns)); err != nil {
		return f, err
	}
	if _, _, err := kw.until(wctx, func(k *kustomizev1.Kustomization) bool {
		return conditions.IsReady(k) && k.Status.LastAppliedRevision == revision
	}); err != nil {
		return f, err
	}

	nc, err := nats.Connect(b.env.NATSURL)
	if err != nil {
		return f, err
	}
	defer nc.Close()
	var mu sync.Mutex
	sub, err := nc.Subscribe(events.Subject(kustomizev1.KustomizationKind, ns, ks.Name), func(m *nats.Msg) {
		if e, err := events.Decode(m.Data); err == nil {
			mu.Lock()
			f.events[e.Reason]++
			mu.Unlock()
		}
	})
	if err != nil {
		return f, err
	}
	defer sub.Unsubscribe() //nolint:errcheck
	time.Sleep(settle)
	counter.reset()

	fmt.Fprintf(os.Stderr, ">> a fight: %d writes/s to spec.replicas for %s, --drift-fight-window %s\n", b.c.fightRate, f.duration, window)
	start := time.Now()
	tick := time.NewTicker(time.Second / time.Duration(b.c.fightRate))
	otherAt := start.Add(f.duration / 2)
	otherDone := make(chan struct{})
	for n := int32(3); time.Since(start) < f.duration; n = 7 - n {
		<-tick.C
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}
		patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, n)
		if err := b.wc.Patch(ctx, d, client.RawPatch(types.MergePatchType, []byte(patch)), client.FieldOwner("bench-fighter")); err == nil {
			f.foreign++
		}
		if !otherAt.IsZero() && time.Now().After(otherAt) {
			otherAt = time.Time{}
			go func() {
				defer close(otherDone)
				f.otherLatency, f.otherErr = b.editOther(ctx, ns)
			}()
		}
	}
	tick.Stop()
	if !otherAt.IsZero() {
		close(otherDone) // the fight was too short to reach it
	}
	<-otherDone
	stopped := time.Now()
	if window > 0 {
		// Until the fight is over: the writer stopped, so the last held
		// correction is made and the window passes quietly; then the
		// DriftContestEnded event.
		deadline := time.Now().Add(15 * time.Minute)
		for {
			mu.Lock()
			ended := f.events[kustomizev1.DriftContestEndedReason]
			mu.Unlock()
			got := &kustomizev1.Kustomization{}
			if err := b.wc.Get(ctx, client.ObjectKeyFromObject(ks), got); err != nil {
				return f, err
			}
			if ended > 0 && !conditions.Has(got, kustomizev1.DriftContestedCondition) {
				break
			}
			if time.Now().After(deadline) {
				return f, fmt.Errorf("the fight did not end within 15 minutes of the writer stopping")
			}
			time.Sleep(200 * time.Millisecond)
		}
		f.settled = time.Since(stopped)
		time.Sleep(settle)
	}
	// Everything sync-controller did about the fight, its end included.
	f.reverts = counter.count("PATCH deployments")
	f.dryRuns = counter.count("PATCH deployments (dry-run)")
	mu.Lock()
	defer mu.Unlock()
	fmt.Fprintf(os.Stderr, "   %d foreign writes, %d reverts, %d dry-runs, events %v; the other object's edit reverted in %s (%v)\n",
		f.foreign, f.reverts, f.dryRuns, f.events, benchfig.Round(f.otherLatency), f.otherErr)
	f.events = copyCounts(f.events)
	if err := b.wc.Delete(ctx, ks); err != nil {
		return f, err
	}
	if err := b.waitGone(ctx, ks, 5*time.Minute); err != nil {
		return f, err
	}
	time.Sleep(settle)
	return f, nil
}

// editOther edits the ConfigMap as another field manager and waits until
// it is back at Git's value.
func (b *bench) editOther(ctx context.Context, ns string) (time.Duration, error) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "other"}}
	if err := b.wc.Patch(ctx, cm, client.RawPatch(types.MergePatchType, []byte(`{"data":{"key":"edited"}}`)), client.FieldOwner("bench-intruder")); err != nil {
		return 0, err
	}
	start := time.Now()
	for time.Since(start) < 30*time.Second {
		if err := b.wc.Get(ctx, client.ObjectKeyFromObject(cm), cm); err == nil && cm.Data["key"] == "from-git" {
			return time.Since(start), nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return 0, fmt.Errorf("not reverted within 30 s")
}

func copyCounts(m map[string]int) map[string]int {
	out := make(map[string]int, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// printFights prints the fight table: per minute of fight, what the
// competing writer wrote, what sync-controller wrote back, and the events
// (each one an alert for an Alert on every event of the Kustomization).
func (r *results) printFights(out io.Writer) {
	if len(r.fights) == 0 {
		return
	}
	fmt.Fprintf(out, "\n%s; load average before %s, after %s\n", r.source, r.load[0], r.load[1])
	fmt.Fprintf(out, "A fight: another field manager writes a Deployment's spec.replicas (Git sets it) %d times a second for %s; one foreign edit of a ConfigMap of the same Kustomization half-way through; what sync-controller did is counted until the fight ended and divided by the fight's minutes\n\n",
		r.c.fightRate, r.c.fightDuration)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "fight detection\tforeign writes/min\tsync-controller writes/min\tdry-runs/min\tevents (alerts)/min\tDriftContested events\tthe other object's edit\n")
	fmt.Fprintf(tw, "---------------\t------------------\t--------------------------\t------------\t-------------------\t---------------------\t-----------------------\n")
	for _, f := range r.fights {
		mode := "off (baseline)"
		if f.window > 0 {
			mode = fmt.Sprintf("on, window %s", f.window)
		}
		other := "reverted in " + benchfig.Seconds(f.otherLatency)
		if f.otherErr != nil {
			other = f.otherErr.Error()
		}
		fmt.Fprintf(tw, "%s\t%.0f\t%.1f\t%.1f\t%.1f\t%d started, %d ended\t%s\n", mode,
			f.perMinute(f.foreign), f.perMinute(f.reverts), f.perMinute(f.dryRuns), f.perMinute(f.alerts()),
			f.events[kustomizev1.DriftContestedReason], f.events[kustomizev1.DriftContestEndedReason], other)
	}
	tw.Flush()
	for _, f := range r.fights {
		reasons := make([]string, 0, len(f.events))
		for k, v := range f.events {
			reasons = append(reasons, fmt.Sprintf("%s ×%d", k, v))
		}
		sort.Strings(reasons)
		fmt.Fprintf(out, "- window %s: %d foreign writes, %d reverts, %d dry-runs; events: %s", f.window, f.foreign, f.reverts, f.dryRuns, strings.Join(reasons, ", "))
		if f.window > 0 {
			fmt.Fprintf(out, "; the fight ended %s after the writer stopped (the last held correction, then the window)", benchfig.Seconds(f.settled))
		}
		fmt.Fprintln(out)
	}
}
