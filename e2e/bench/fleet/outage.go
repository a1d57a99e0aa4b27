package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"plumb.dev/api/meta"
	notificationv1 "plumb.dev/api/notification/v1"
	"plumb.dev/e2e/bench/benchkit"
	"plumb.dev/pkg/benchfig"
)

// outageAlertWait bounds the wait for the alerts after NATS returns.
const outageAlertWait = 5 * time.Minute

// outageFigures are the figures of one NATS outage in a fleet of n at rest.
type outageFigures struct {
	n      int
	outage time.Duration
	// edits made during the outage, one per app, and those reverted.
	edits, corrected int
	latencies        []time.Duration
	// queuedMax is the largest plumb_events_queue_length each controller
	// showed during the outage; dropped the growth of
	// plumb_events_dropped_total over it and the recovery.
	queuedMax, dropped map[string]float64
	// alerts are the apps whose DriftCorrected alert reached the Slack
	// stand-in after NATS returned; early those delivered while it was
	// down (which would be wrong: the alerts go through NATS).
	alerts, early int
	// alertsAfter is how long after NATS returned the last expected
	// alert arrived.
	alertsAfter time.Duration
	// pidsChanged names the controllers whose process changed.
	pidsChanged []string
	load        string
}

func runOutage(ctx context.Context, c config, res *results) error {
	err := withEnv(ctx, c, envOptions{}, func(b *bench) error {
		f, err := b.natsOutage(ctx, c.ns[0])
		res.outage = f
		return err
	})
	return res.finish(err)
}

// natsOutage makes a fleet of n Ready with an Alert of every
// Kustomization's events to the Slack stand-in, stops NATS for
// c.natsOutage while foreign edits are made (each app once, spread over
// the outage), starts it again and waits for the alerts.
func (b *bench) natsOutage(ctx context.Context, n int) (*outageFigures, error) {
	f := &outageFigures{n: n, outage: b.c.natsOutage, queuedMax: map[string]float64{}, dropped: map[string]float64{}}
	if err := b.readyFleet(ctx, n); err != nil {
		return nil, err
	}
	if err := b.createAlert(ctx); err != nil {
		return nil, err
	}
	time.Sleep(settle)

	pids := map[string]int{}
	droppedBefore := map[string]float64{}
	for name, c := range b.env.Controllers {
		pids[name] = c.Pid()
		dropped, err := b.controllerMetric(ctx, name, "plumb_events_dropped_total")
		if err != nil {
			return nil, err
		}
		droppedBefore[name] = dropped
	}
	vw, err := b.watchConfigMaps(ctx)
	if err != nil {
		return nil, err
	}
	defer vw.stop()
	time.Sleep(settle)

	edits := min(n, max(1, int(b.c.natsOutage.Seconds()*float64(b.c.outageEditRate))))
	say(">> N=%d: NATS stopped for %s; %d foreign edits, one per app, spread over it", n, b.c.natsOutage, edits)
	b.env.StopNATS()
	stopped := time.Now()
	natsDown := true
	defer func() {
		if natsDown {
			_ = b.env.StartNATS()
		}
	}()
	octx, stop := context.WithCancel(ctx)
	var sampler sync.WaitGroup
	var queuedMu sync.Mutex
	sampler.Add(1)
	go func() {
		defer sampler.Done()
		for octx.Err() == nil {
			for name := range b.env.Controllers {
				if v, err := b.controllerMetric(octx, name, "plumb_events_queue_length"); err == nil {
					queuedMu.Lock()
					f.queuedMax[name] = max(f.queuedMax[name], v)
					queuedMu.Unlock()
				}
			}
			select {
			case <-octx.Done():
			case <-time.After(5 * time.Second):
			}
		}
	}()

	var (
		mu     sync.Mutex
		wg     sync.WaitGroup
		edited []string
	)
	gap := b.c.natsOutage / time.Duration(edits+1)
	for j := range edits {
		time.Sleep(time.Until(stopped.Add(time.Duration(j+1) * gap)))
		t := editTarget{ns: appName(j * n / edits), name: "config"}
		reverted, err := b.foreignEdit(ctx, vw, t, fmt.Sprintf("during-the-outage-%d", j))
		if err != nil {
			say("   %v", err)
			continue
		}
		edited = append(edited, t.ns)
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := reverted(30 * time.Second)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				say("   %s: %v", t.key(), err)
				return
			}
			f.latencies = append(f.latencies, d)
		}()
	}
	f.edits = len(edited)
	time.Sleep(time.Until(stopped.Add(b.c.natsOutage)))
	wg.Wait()
	f.corrected = len(f.latencies)
	// Anything about the edits on the stand-in now came without NATS.
	f.early = len(b.driftAlerts(edited))
	stop()
	sampler.Wait()

	say(">> N=%d: NATS started again after %s; %d of %d edits corrected during the outage", n, benchfig.Round(time.Since(stopped)), f.corrected, f.edits)
	if err := b.env.StartNATS(); err != nil {
		return f, fmt.Errorf("starting NATS again: %w", err)
	}
	natsDown = false
	back := time.Now()
	for {
		got := b.driftAlerts(edited)
		f.alerts = len(got)
		if f.alerts >= len(edited) {
			f.alertsAfter = time.Since(back)
			break
		}
		if time.Since(back) > outageAlertWait {
			say("   %d of %d alerts after %s", f.alerts, len(edited), outageAlertWait)
			break
		}
		select {
		case <-ctx.Done():
			return f, ctx.Err()
		case <-time.After(time.Second):
		}
	}
	for name, c := range b.env.Controllers {
		if c.Pid() != pids[name] {
			f.pidsChanged = append(f.pidsChanged, name)
		}
		v, err := b.controllerMetric(ctx, name, "plumb_events_dropped_total")
		if err != nil {
			return f, err
		}
		f.dropped[name] = v - droppedBefore[name]
	}
	f.load = benchfig.LoadAvg()
	return f, nil
}

// createAlert sends every Kustomization event of the fleet to the Slack
// stand-in.
func (b *bench) createAlert(ctx context.Context) error {
	provider := &notificationv1.Provider{
		ObjectMeta: metav1.ObjectMeta{Namespace: fleetNamespace, Name: "slack"},
		Spec:       notificationv1.ProviderSpec{Type: "slack", Channel: "#fleet", Address: b.env.Slack.URL()},
	}
	alert := &notificationv1.Alert{
		ObjectMeta: metav1.ObjectMeta{Namespace: fleetNamespace, Name: "fleet"},
		Spec: notificationv1.AlertSpec{
			ProviderRef:   meta.LocalObjectReference{Name: provider.Name},
			EventSeverity: "info",
			EventSources:  []notificationv1.CrossNamespaceObjectReference{{Kind: "Kustomization", Name: "*"}},
		},
	}
	for _, o := range []client.Object{provider, alert} {
		if err := b.fast.Create(ctx, o); err != nil {
			return fmt.Errorf("creating %s: %w", o.GetName(), err)
		}
	}
	return nil
}

// driftAlerts returns the edited apps whose drift correction reached the
// Slack stand-in: a message naming the app's ConfigMap and the edited
// field (the DriftCorrected event's change list).
func (b *bench) driftAlerts(apps []string) map[string]bool {
	msgs, _ := b.env.Slack.Messages()
	got := map[string]bool{}
	for _, app := range apps {
		field := "ConfigMap/" + app + "/config data." + driftKey
		for _, m := range msgs {
			if strings.Contains(m.Raw, field) {
				got[app] = true
				break
			}
		}
	}
	return got
}

// controllerMetric sums one metric's samples on a controller's /metrics.
func (b *bench) controllerMetric(ctx context.Context, name, metric string) (float64, error) {
	c := b.env.Controllers[name]
	got, err := benchkit.ScrapeCounters(ctx, b.meter.APIClient, "http://"+c.MetricsAddr+"/metrics", metric)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	return got.Total(), nil
}

// printOutage prints the outage's figures.
func (r *results) printOutage(out io.Writer) {
	f := r.outage
	fmt.Fprintf(out, "NATS outage: a fleet of %d at rest, NATS stopped for %s, %d foreign edits (one per app) spread over it; an Alert of every Kustomization event to the Slack stand-in\n",
		f.n, f.outage, f.edits)
	p50, p99 := "-", "-"
	if len(f.latencies) > 0 {
		p50, p99 = benchfig.Seconds(benchfig.Percentile(f.latencies, 0.5)), benchfig.Seconds(benchfig.Percentile(f.latencies, 0.99))
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	writeHeader(tw, []string{"figure", "value", "target"})
	fmt.Fprintf(tw, "drift corrected during the outage\t%d of %d (p50 %s, p99 %s)\tall\n", f.corrected, f.edits, p50, p99)
	fmt.Fprintf(tw, "drift alerts delivered while NATS was down\t%d\t0 (they go through NATS)\n", f.early)
	after := "-"
	if f.alerts >= f.edits {
		after = benchfig.Seconds(f.alertsAfter)
	}
	fmt.Fprintf(tw, "drift alerts delivered after NATS returned\t%d of %d expected (the last %s after)\tall\n", f.alerts, f.edits, after)
	for _, name := range slices.Sorted(maps.Keys(f.dropped)) {
		fmt.Fprintf(tw, "%s: events queued (largest plumb_events_queue_length) / dropped (plumb_events_dropped_total)\t%.0f / %.0f\t— / 0\n", name, f.queuedMax[name], f.dropped[name])
	}
	pids := "all unchanged"
	if len(f.pidsChanged) > 0 {
		pids = "changed: " + strings.Join(f.pidsChanged, ", ")
	}
	fmt.Fprintf(tw, "controller processes\t%s\tunchanged\n", pids)
	tw.Flush()
	fmt.Fprintf(out, "load average after: %s\n\n", f.load)
}
