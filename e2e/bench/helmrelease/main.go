package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"go.uber.org/zap/zapcore"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"plumb.dev/e2e/bench/benchkit"
	"plumb.dev/e2e/localenv"
	"plumb.dev/pkg/benchfig"
)

// settle is how long after the last release caught up its requests are
// still counted: events and the last status writes land just after it.
const settle = time.Second

type config struct {
	n             int
	interval      time.Duration
	createWorkers int
	bareWorkers   int
	readyTimeout  time.Duration
	driftEdits    int
	driftTimeout  time.Duration
	floor         bool
	memEvery      time.Duration
	sides         []string
	logLevel      string
	timeout       time.Duration
}

func main() {
	var c config
	var sides string
	flag.IntVar(&c.n, "n", 100, "HelmReleases per side")
	flag.DurationVar(&c.interval, "interval", time.Minute, "every HelmRelease's spec.interval, on both sides: Flux corrects drift only at the next reconcile")
	flag.IntVar(&c.createWorkers, "create-workers", 32, "requests in flight while the bench creates and patches the HelmReleases")
	flag.IntVar(&c.bareWorkers, "bare-workers", 16, "the floor's workers (sync-controller's --apply-concurrency)")
	flag.DurationVar(&c.readyTimeout, "ready-timeout", 15*time.Minute, "how long one phase may take on one side")
	flag.IntVar(&c.driftEdits, "drift-edits", 5, "Deployments whose replicas are changed by hand at once (at most -n); 0 skips drift")
	flag.DurationVar(&c.driftTimeout, "drift-timeout", 0, "how long a drift edit may stay before it counts as missed; 0: twice -interval plus 30s")
	flag.BoolVar(&c.floor, "floor", true, "after both sides, apply the same objects with a bare server-side-apply loop")
	flag.DurationVar(&c.memEvery, "mem-every", 500*time.Millisecond, "how often the proportional set size of each controller and its workers is sampled")
	flag.StringVar(&sides, "sides", "plumb,flux", "the sides to run, in order: plumb, flux")
	flag.StringVar(&c.logLevel, "log-level", "info", "the controllers' --log-level")
	flag.DurationVar(&c.timeout, "timeout", 90*time.Minute, "give up after this long")
	flag.Parse()
	if c.n < 1 || c.n > 10000 {
		fmt.Fprintln(os.Stderr, "helmreleasebench: -n must be from 1 to 10000")
		os.Exit(2)
	}
	if c.memEvery < 10*time.Millisecond {
		fmt.Fprintln(os.Stderr, "helmreleasebench: -mem-every must be at least 10ms")
		os.Exit(2)
	}
	if c.driftTimeout == 0 {
		c.driftTimeout = 2*c.interval + 30*time.Second
	}
	for _, s := range strings.Split(sides, ",") {
		switch s = strings.TrimSpace(s); s {
		case "plumb", "flux":
			c.sides = append(c.sides, s)
		default:
			fmt.Fprintf(os.Stderr, "helmreleasebench: -sides: %q is neither plumb nor flux\n", s)
			os.Exit(2)
		}
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "helmreleasebench:", err)
		os.Exit(1)
	}
}

// bench is the environment both sides run in, one after the other.
type bench struct {
	c     config
	env   *localenv.Env
	wc    client.WithWatch // the bench's reads and watches
	fast  client.Client    // the bench's writes: no client-side rate limit
	meter *benchkit.Meter
}

func run(c config) error {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	res := &results{c: c, load0: benchfig.LoadAvg(), source: sourceState()}
	say(">> starting the control plane (etcd, kube-apiserver, kube-controller-manager, the pod simulator) and Plumb's four controllers")
	env, err := localenv.Start(ctx, localenv.Options{LogLevel: c.logLevel})
	if err != nil {
		return err
	}
	defer func() {
		if err := env.Stop(); err != nil {
			say("stopping the environment: %v", err)
		}
	}()
	b := &bench{c: c, env: env}
	if b.wc, err = client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme}); err != nil {
		return err
	}
	fastCfg := rest.CopyConfig(env.Config)
	fastCfg.QPS, fastCfg.Burst = -1, -1
	if b.fast, err = client.New(fastCfg, client.Options{Scheme: env.Scheme}); err != nil {
		return err
	}
	if b.meter, err = benchkit.NewMeter(env); err != nil {
		return err
	}
	err = b.runAll(ctx, res)
	res.finish()
	if err != nil {
		say("   the environment's logs: %s/logs", env.StateDir)
	}
	return err
}

// runAll runs the sides in order, then the floor. Plumb's controllers run
// for Plumb's side only: they are stopped before helm-controller starts,
// so that neither side shares the two cores with the other's controllers.
func (b *bench) runAll(ctx context.Context, res *results) error {
	for _, name := range b.c.sides {
		if name == "plumb" {
			f, err := b.runSide(ctx, &plumbSide, b.plumbSource)
			if f != nil {
				res.sides = append(res.sides, f)
			}
			if err != nil {
				return fmt.Errorf("the Plumb side: %w", err)
			}
			continue
		}
		say(">> Flux: stopping Plumb's controllers; installing Flux's CRDs; starting helm-controller")
		for _, c := range plumbSide.controllers {
			if err := b.env.Controllers[c].Stop(10 * time.Second); err != nil {
				return err
			}
			b.meter.Forget(c)
		}
		if err := b.installFluxCRDs(); err != nil {
			return err
		}
		hc, metricsURL, err := b.startHelmController(ctx)
		if err != nil {
			return err
		}
		defer func() { _ = hc.Stop(10 * time.Second) }()
		b.meter.Add(helmControllerName, benchkit.Process{MetricsURL: metricsURL, Pid: hc.Pid})
		f, err := b.runSide(ctx, &fluxSide, b.fluxSource)
		if f != nil {
			res.sides = append(res.sides, f)
		}
		if err != nil {
			return fmt.Errorf("the Flux side: %w", err)
		}
	}
	if b.c.floor {
		var err error
		if res.floor, err = b.runFloor(ctx); err != nil {
			return fmt.Errorf("the floor: %w", err)
		}
	}
	return nil
}

func say(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// sourceState names the commit measured.
func sourceState() string {
	root, err := localenv.RepoRoot()
	if err != nil {
		return "?"
	}
	head, err := exec.Command("git", "-C", root, "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "?"
	}
	state := "commit " + strings.TrimSpace(string(head))
	dirty, err := exec.Command("git", "-C", root, "status", "--porcelain", "--",
		"source-controller", "render-controller", "sync-controller", "pkg", "api").Output()
	if err == nil && len(strings.TrimSpace(string(dirty))) > 0 {
		state += " with uncommitted changes under the controllers, pkg or api"
	}
	return state
}
