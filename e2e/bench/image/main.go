package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"plumb.dev/e2e/bench/benchkit"
	"plumb.dev/e2e/localenv"
	"plumb.dev/pkg/benchfig"
)

type config struct {
	n            int
	scanInterval time.Duration
	roundTimeout time.Duration
	floor        bool
	logLevel     string
	timeout      time.Duration
}

func main() {
	var c config
	flag.IntVar(&c.n, "n", 10, "new tags pushed one after another with the webhook, and as many for the floor (1 to 50)")
	flag.DurationVar(&c.scanInterval, "scan-interval", 15*time.Second, "the ImageRepository's spec.interval for the one round without a webhook; 0 skips it")
	flag.DurationVar(&c.roundTimeout, "round-timeout", 2*time.Minute, "how long one tag may take to reach the Deployment")
	flag.BoolVar(&c.floor, "floor", true, "after Plumb, do the chain's work directly with Plumb's objects suspended")
	flag.StringVar(&c.logLevel, "log-level", "info", "the controllers' --log-level")
	flag.DurationVar(&c.timeout, "timeout", 20*time.Minute, "give up after this long")
	flag.Parse()
	if c.n < 1 || c.n > 50 {
		fmt.Fprintln(os.Stderr, "imagebench: -n must be from 1 to 50")
		os.Exit(2)
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "imagebench:", err)
		os.Exit(1)
	}
}

// bench is one environment with the sample and its image automation.
type bench struct {
	c     config
	env   *localenv.Env
	demo  *localenv.Demo
	wc    client.WithWatch
	clone *localenv.Clone
	// next is the patch number of the next tag: 1.0.<next>.
	next int
}

func run(c config) error {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	res := &results{c: c, load0: benchfig.LoadAvg(),
		source: benchkit.SourceState("image-controller", "notification-controller", "source-controller", "render-controller", "sync-controller", "pkg", "api")}
	// What was measured is printed also when an error ends the run.
	defer func() {
		res.load1 = benchfig.LoadAvg()
		res.print(os.Stdout)
	}()
	say(">> starting the suite as `make run` does (the pod simulator, the registry, the five controllers)")
	env, err := localenv.Start(ctx, localenv.Options{LogLevel: c.logLevel, Registry: true, ControllerArgs: localenv.TenancyArgs()})
	if err != nil {
		return err
	}
	defer func() {
		if err := env.Stop(); err != nil {
			say("stopping the environment: %v", err)
		}
	}()
	b := &bench{c: c, env: env, next: 1}
	if err := b.setUp(ctx); err != nil {
		return err
	}
	if err := b.runAll(ctx, res); err != nil {
		say("   the environment's logs: %s/logs", env.StateDir)
		return err
	}
	return nil
}

func (b *bench) runAll(ctx context.Context, res *results) error {
	t, err := b.track(ctx)
	if err != nil {
		return err
	}
	say(">> webhook: %d new tags, one after another", b.c.n)
	for range b.c.n {
		r, err := b.plumbRound(ctx, t, true)
		if err != nil {
			return fmt.Errorf("webhook round %s: %w", r.tag, err)
		}
		res.webhook = append(res.webhook, r)
		say("   %s: %s", r.tag, r)
	}
	if b.c.scanInterval > 0 {
		say(">> interval: one tag without a webhook, the ImageRepository scanning every %s", b.c.scanInterval)
		r, err := b.intervalRound(ctx, t)
		if err != nil {
			return fmt.Errorf("interval round: %w", err)
		}
		res.interval = r
		say("   %s: %s", r.tag, r)
	}
	if b.c.floor {
		say(">> floor: Plumb's objects suspended; the bench tags, resolves, commits and applies %d times", b.c.n)
		if err := b.suspendAll(ctx); err != nil {
			return err
		}
		for range b.c.n {
			d, tag, err := b.floorRound(ctx)
			if err != nil {
				return fmt.Errorf("floor round %s: %w", tag, err)
			}
			res.floor = append(res.floor, d)
			say("   %s: %s", tag, benchfig.Seconds(benchfig.Round(d)))
		}
	}
	return nil
}

func say(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}
