package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
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

// settle is how long after the last Ready the requests are still counted:
// events and the last status writes land just after it.
const settle = time.Second

type config struct {
	ns             []int
	repos          int
	layout         string
	workers        int
	createWorkers  int
	ksInterval     time.Duration
	sourceInterval time.Duration
	readyTimeout   time.Duration
	restWindow     time.Duration
	driftEdits     int
	driftRate      int
	singleObjects  int
	singleRuns     int
	singleShapes   []singleShape
	profileDir     string
	profileSeconds int
	logLevel       string
	concurrent     int
	floor          bool
	// planeCPUs, when set, are the CPUs the control plane runs on, and
	// plumbCPUs the rest, where the controllers and the bench run
	// (-control-plane-cpus).
	planeCPUs, plumbCPUs benchkit.CPUSet
	// controllerArgs are more flags of single controllers (-controller-arg).
	controllerArgs map[string][]string
	timeout        time.Duration
	// shards are the shard counts each N runs with (1: one instance of
	// each controller, as before).
	shards []int
	// ha runs the takeover benchmark instead of the fleets (ha.go).
	ha bool
	// restart restarts controllers in a fleet at rest instead
	// (restart.go).
	restart     bool
	haKillAfter float64
	haSignal    string
	hookEvery   int
	lease       localenv.LeaderElection
	// soak, when set, runs the soak for this long instead of the fleets
	// (soak.go).
	soak         time.Duration
	soakEditRate int
	soakBaseline time.Duration
	soakOut      string
	// natsOutage, when set, stops NATS for this long in a fleet at rest
	// instead of the fleets (outage.go).
	natsOutage     time.Duration
	outageEditRate int
}

func main() {
	var c config
	var nList, shardList string
	var with5000 bool
	flag.StringVar(&nList, "n", "100,500,1000", "the fleet sizes (Kustomizations), comma-separated; each runs in a fresh environment")
	flag.BoolVar(&with5000, "with-5000", false, "also run N=5000 (about 20,000 objects; minutes on 2 cores)")
	flag.IntVar(&c.repos, "repos", 5, "GitRepositories the Kustomizations share")
	flag.StringVar(&c.layout, "layout", layoutPaths, "paths: a folder per Kustomization in the shared repositories; substitute: one shared folder, the namespace by postBuild.substitute")
	flag.IntVar(&c.workers, "bare-workers", 16, "the bare loop's workers: sync-controller's --apply-concurrency (16), which also bounds its --concurrent 4 × 4 objects")
	flag.IntVar(&c.createWorkers, "create-workers", 32, "requests in flight while the bench creates the Kustomizations")
	flag.DurationVar(&c.ksInterval, "interval", 10*time.Minute, "the Kustomizations' spec.interval")
	flag.DurationVar(&c.sourceInterval, "source-interval", 10*time.Minute, "the GitRepositories' spec.interval")
	flag.DurationVar(&c.readyTimeout, "ready-timeout", 15*time.Minute, "how long to wait for all Kustomizations of one N to be Ready")
	flag.DurationVar(&c.restWindow, "rest", time.Minute, "how long the requests at rest are counted after all are Ready")
	flag.IntVar(&c.driftEdits, "drift-edits", 100, "foreign edits at fleet scale (at most one per Kustomization); 0 skips drift")
	flag.IntVar(&c.driftRate, "drift-rate", 20, "foreign edits per second")
	flag.IntVar(&c.singleObjects, "single-objects", 1000, "objects of the single large Kustomization; 0 skips that case")
	flag.IntVar(&c.singleRuns, "single-runs", 3, "new commits timed for the single Kustomization; the median is reported")
	shapeList := flag.String("single-shapes", "bare,targetNamespace,images-patch", "the specs of the single Kustomization, comma-separated, each timed -single-runs times: "+
		"bare (nothing kustomize acts on), targetNamespace, images-patch (an image and a patch of every ConfigMap)")
	flag.StringVar(&c.profileDir, "profile-dir", "", "write CPU profiles of render-, sync- and source-controller during the largest N's sync, and their heaps after it, here")
	flag.IntVar(&c.profileSeconds, "profile-seconds", 30, "the length of the CPU profiles (from the first create)")
	flag.BoolVar(&c.floor, "floor", true, "after each fleet, time the floor: the same creates, one status write each and the objects, with no controller (floor.go)")
	flag.IntVar(&c.concurrent, "concurrent", 0, "the controllers' --concurrent (objects reconciled at the same time); 0 keeps their default (4)")
	c.controllerArgs = map[string][]string{}
	flag.Func("controller-arg", "NAME=FLAG: pass FLAG to the controller NAME (e.g. sync-controller=--concurrent=16); repeatable", func(v string) error {
		name, arg, ok := strings.Cut(v, "=")
		if !ok || !slices.Contains(localenv.ControllerNames, name) || !strings.HasPrefix(arg, "--") {
			return fmt.Errorf("want NAME=--flag with NAME one of %s, got %q", strings.Join(localenv.ControllerNames, ", "), v)
		}
		c.controllerArgs[name] = append(c.controllerArgs[name], arg)
		return nil
	})
	flag.Func("control-plane-cpus", "CPUs, comma-separated (e.g. 0), to run kube-apiserver, etcd and kube-controller-manager on, and the controllers, their render workers and this bench (its NATS and Git server) on the others, "+
		"as production runs the control plane on machines of its own; unset, all share every CPU", func(v string) error {
		set, err := benchkit.ParseCPUSet(v)
		if err != nil {
			return err
		}
		rest, err := set.Rest()
		if err != nil {
			return err
		}
		c.planeCPUs, c.plumbCPUs = set, rest
		return nil
	})
	flag.StringVar(&c.logLevel, "log-level", "info", "the controllers' --log-level")
	flag.DurationVar(&c.timeout, "timeout", 90*time.Minute, "give up after this long")
	flag.StringVar(&shardList, "shards", "1", "the shard counts each N runs with, comma-separated, e.g. 1,3: with S > 1, S shards of the four controllers "+
		"(e2e/localenv's Shards, beside the main instance) and the Kustomizations and GitRepositories labelled round-robin with sharding.plumb.dev/key")
	flag.BoolVar(&c.ha, "ha", false, "instead of the fleets: render- and sync-controller as a leader and a standby; sync-controller's leader killed in the middle of the sync")
	flag.BoolVar(&c.restart, "restart", false, "instead of the fleets: once all are Ready, restart sync-, render- and source-controller one at a time (SIGTERM) and measure requests until steady, objects re-applied, hooks re-run, prunes and drift at readiness")
	flag.Float64Var(&c.haKillAfter, "ha-kill-after", 1.0/3, "-ha: kill the leader once this fraction of the Kustomizations is Ready (0 < f < 1)")
	flag.StringVar(&c.haSignal, "ha-signal", "kill", "-ha: how the leader ends: kill (SIGKILL, as a crash; restarted after a second, as a Pod) or term (SIGTERM: it releases the Lease)")
	flag.IntVar(&c.hookEvery, "ha-hook-every", 10, "-ha and -restart: one Kustomization in this many has a PostSync hook (a ConfigMap); 0 gives none")
	flag.DurationVar(&c.lease.LeaseDuration, "ha-lease-duration", 4*time.Second, "-ha: --leader-election-lease-duration")
	flag.DurationVar(&c.lease.RenewDeadline, "ha-renew-deadline", 3*time.Second, "-ha: --leader-election-renew-deadline")
	flag.DurationVar(&c.lease.RetryPeriod, "ha-retry-period", time.Second, "-ha: --leader-election-retry-period")
	flag.DurationVar(&c.soak, "soak", 0, "instead of the fleets: a fleet of the first -n at rest for this long, with a commit a minute to a shared GitRepository and -soak-edit-rate foreign edits a second; every controller sampled each minute (heap, RSS, goroutines, open files, error log lines), the API server's open watches, drift p99 per minute")
	flag.IntVar(&c.soakEditRate, "soak-edit-rate", 5, "-soak: foreign edits a second")
	flag.DurationVar(&c.soakBaseline, "soak-baseline", 10*time.Minute, "-soak: growth is measured from the sample this long after the start to the last")
	flag.StringVar(&c.soakOut, "soak-out", "", "-soak: write soak.csv and soak.svg (the curves) into this folder")
	flag.DurationVar(&c.natsOutage, "nats-outage", 0, "instead of the fleets: a fleet of the first -n at rest with an Alert of every Kustomization event; NATS stopped for this long while foreign edits happen (one per app, -outage-edit-rate a second at most); drift corrected during it, events queued and dropped, alerts delivered after it, the controllers' pids")
	flag.IntVar(&c.outageEditRate, "outage-edit-rate", 2, "-nats-outage: foreign edits a second at most (one per app)")
	flag.Parse()
	var err error
	// -n "": no fleet, only the single Kustomization of -single-objects.
	if strings.TrimSpace(nList) != "" {
		if c.ns, err = positives(nList, 1_000_000); err != nil {
			fmt.Fprintf(os.Stderr, "fleetbench: -n: %v\n", err)
			os.Exit(2)
		}
	} else if c.singleObjects == 0 || c.ha {
		fmt.Fprintln(os.Stderr, "fleetbench: -n \"\" leaves nothing to measure with -ha or -single-objects 0")
		os.Exit(2)
	}
	if c.singleShapes, err = parseShapes(*shapeList); err != nil {
		fmt.Fprintf(os.Stderr, "fleetbench: -single-shapes: %v\n", err)
		os.Exit(2)
	}
	if c.shards, err = positives(shardList, 16); err != nil {
		fmt.Fprintf(os.Stderr, "fleetbench: -shards: %v\n", err)
		os.Exit(2)
	}
	if c.haKillAfter <= 0 || c.haKillAfter >= 1 {
		fmt.Fprintln(os.Stderr, "fleetbench: -ha-kill-after must be between 0 and 1")
		os.Exit(2)
	}
	if c.haSignal != signalKill && c.haSignal != signalTerm {
		fmt.Fprintf(os.Stderr, "fleetbench: -ha-signal must be %s or %s\n", signalKill, signalTerm)
		os.Exit(2)
	}
	if c.soak > 0 && (c.soakEditRate < 1 || c.soak < 2*time.Minute) {
		fmt.Fprintln(os.Stderr, "fleetbench: -soak needs at least 2m and -soak-edit-rate at least 1")
		os.Exit(2)
	}
	if c.natsOutage < 0 || c.outageEditRate < 1 {
		fmt.Fprintln(os.Stderr, "fleetbench: -nats-outage must not be negative and -outage-edit-rate must be at least 1")
		os.Exit(2)
	}
	if c.hookEvery < 0 {
		fmt.Fprintln(os.Stderr, "fleetbench: -ha-hook-every must not be negative")
		os.Exit(2)
	}
	if with5000 {
		c.ns = append(c.ns, 5000)
	}
	if c.layout != layoutPaths && c.layout != layoutSubstitute {
		fmt.Fprintf(os.Stderr, "fleetbench: -layout must be %s or %s\n", layoutPaths, layoutSubstitute)
		os.Exit(2)
	}
	// The bench's clients log through controller-runtime: errors only.
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "fleetbench:", err)
		os.Exit(1)
	}
}

// bench is one environment's worth of state.
type bench struct {
	c     config
	env   *localenv.Env
	wc    client.WithWatch // the bench's reads and watches
	fast  client.Client    // the bench's writes: no client-side rate limit
	meter *benchkit.Meter
	// pprof holds each controller's pprof address when profiling.
	pprof map[string]string
	// profileN is the N whose sync is profiled.
	profileN int
	// lastSingle is how long the last run of the single Kustomization
	// took from the push: the length of the next one's profile.
	lastSingle time.Duration
	// shards is how many shards the fleet is labelled over (1: none).
	shards int
	// hookEvery gives one Kustomization in this many a PostSync hook
	// (-ha; 0: none).
	hookEvery int
}

// positives parses a comma-separated list of numbers from 1 to most.
func positives(list string, most int) ([]int, error) {
	var out []int
	for _, s := range strings.Split(list, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > most {
			return nil, fmt.Errorf("%q is not a number from 1 to %d", s, most)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, errors.New("empty")
	}
	return out, nil
}

func run(c config) error {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	res := &results{c: c, load0: benchfig.LoadAvg(), cpu0: benchfig.ReadMachineCPU(), source: sourceState()}
	if c.ha {
		return runHA(ctx, c, res)
	}
	if c.restart {
		return runRestarts(ctx, c, res)
	}
	if c.soak > 0 {
		return runSoak(ctx, c, res)
	}
	if c.natsOutage > 0 {
		return runOutage(ctx, c, res)
	}
	if c.singleObjects > 0 {
		err := withEnv(ctx, c, envOptions{}, func(b *bench) error {
			say(">> the single Kustomization of %d objects, %d runs of each of %v", c.singleObjects, c.singleRuns, c.singleShapes)
			var err error
			res.single, err = b.runSingle(ctx)
			return err
		})
		if err != nil {
			return err
		}
	}
	largest := 0
	for _, n := range c.ns {
		largest = max(largest, n)
	}
	for _, n := range c.ns {
		var err error
		for _, shards := range c.shards {
			err = withEnv(ctx, c, envOptions{profileN: largest, shards: shards}, func(b *bench) error {
				f, err := b.runFleet(ctx, n)
				if err != nil {
					return fmt.Errorf("fleet of %d, %d shards: %w", n, shards, err)
				}
				res.fleets = append(res.fleets, f)
				return nil
			})
			if err != nil {
				break
			}
		}
		if err != nil {
			return res.finish(err)
		}
	}
	return res.finish(nil)
}

// envOptions say how one environment differs from the others.
type envOptions struct {
	// profileN is the N whose sync is profiled.
	profileN int
	// shards, when more than 1, starts that many shards beside the main
	// instance, and the fleet is labelled over them.
	shards int
	// standbys run as a leader and a standby (localenv.Options.Standbys).
	standbys []string
}

// withEnv starts a fresh environment (control plane, Git server, the four
// controllers as processes, through e2e/localenv as `make run` does), runs
// fn and stops it.
func withEnv(ctx context.Context, c config, eo envOptions, fn func(*bench) error) error {
	b := &bench{c: c, profileN: eo.profileN, shards: max(eo.shards, 1)}
	opts := localenv.Options{LogLevel: c.logLevel, ControllerArgs: map[string][]string{}, Standbys: eo.standbys, LeaderElection: c.lease}
	if b.shards > 1 {
		opts.Shards = b.shards
	}
	if c.concurrent > 0 {
		for _, name := range localenv.ControllerNames {
			opts.ControllerArgs[name] = append(opts.ControllerArgs[name], fmt.Sprintf("--concurrent=%d", c.concurrent))
		}
	}
	for name, args := range c.controllerArgs {
		opts.ControllerArgs[name] = append(opts.ControllerArgs[name], args...)
	}
	if c.profileDir != "" && (b.shards > 1 || len(eo.standbys) > 0) {
		// A controller's flags are every instance's: one pprof address
		// cannot serve several processes.
		say(">> not profiling: %d shards, standbys %v", b.shards, eo.standbys)
	} else if c.profileDir != "" {
		b.pprof = map[string]string{}
		for _, name := range localenv.ControllerNames {
			addr, err := freeAddr()
			if err != nil {
				return err
			}
			b.pprof[name] = addr
			opts.ControllerArgs[name] = append(opts.ControllerArgs[name], "--pprof-addr="+addr)
		}
	}
	say(">> starting the control plane, the Git server and the four controllers (%d shards, standbys: %v)", b.shards, eo.standbys)
	env, err := localenv.Start(ctx, opts)
	if err != nil {
		return err
	}
	b.env = env
	defer func() {
		if err := env.Stop(); err != nil {
			say("stopping the environment: %v", err)
		}
	}()
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
	if err := b.pinCPUs(); err != nil {
		return err
	}
	return fn(b)
}

// pinCPUs puts the control plane on -control-plane-cpus and everything
// else this process started (the controllers with their workers, the
// example plugin) and this process itself on the other CPUs, when asked.
// A controller restarted later (-restart, -ha) is started by this
// process's pinned threads, and so is on the same CPUs.
func (b *bench) pinCPUs() error {
	if b.c.planeCPUs == nil {
		return nil
	}
	var plane []int
	if b.env.KCM != nil && b.env.KCM.Pid() != 0 {
		plane = append(plane, b.env.KCM.Pid())
	}
	for _, name := range benchkit.PlaneNames {
		pid := b.meter.PlanePid(name)
		if pid == 0 {
			return fmt.Errorf("pinning the control plane: %s was not found", name)
		}
		plane = append(plane, pid)
	}
	for _, pid := range plane {
		if err := benchkit.Pin(pid, b.c.planeCPUs); err != nil {
			return err
		}
	}
	if err := benchkit.PinTree(os.Getpid(), b.c.plumbCPUs, plane...); err != nil {
		return err
	}
	say(">> the control plane on CPUs %s; the controllers and the bench on CPUs %s", b.c.planeCPUs, b.c.plumbCPUs)
	return nil
}

// freeAddr picks a free port on 127.0.0.1 for a pprof server (which binds
// the address itself, so the port is closed here and bound again there).
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// profiled are the controllers whose CPU is profiled.
var profiled = []string{localenv.RenderController, localenv.SyncController, localenv.SourceController}

// startProfiles starts CPU profiles of the controllers for seconds, named
// what-n<N>, when profiling and n is the profiled N; the returned function
// waits for them and writes heap profiles.
func (b *bench) startProfiles(ctx context.Context, n int, what string, seconds int) func() {
	if b.pprof == nil || n != b.profileN {
		return func() {}
	}
	return b.profiles(ctx, fmt.Sprintf("%sn%d", what, n), seconds)
}

// profiles takes CPU profiles of the controllers for seconds, named
// after what they cover, and heap profiles when the returned function is
// called after them.
func (b *bench) profiles(ctx context.Context, what string, seconds int) func() {
	if b.pprof == nil {
		return func() {}
	}
	if err := os.MkdirAll(b.c.profileDir, 0o755); err != nil {
		say("profile: %v", err)
		return func() {}
	}
	var wg sync.WaitGroup
	for _, name := range profiled {
		wg.Add(1)
		go func() {
			defer wg.Done()
			url := fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", b.pprof[name], seconds)
			file := filepath.Join(b.c.profileDir, fmt.Sprintf("cpu-%s-%s.pprof", name, what))
			if err := fetchTo(ctx, http.DefaultClient, url, file, time.Duration(seconds+30)*time.Second); err != nil {
				say("profile of %s: %v", name, err)
			}
		}()
	}
	// kube-apiserver's CPU is most of a fleet's cost; it serves pprof
	// (--profiling, on by default) to the admin credentials.
	wg.Add(1)
	go func() {
		defer wg.Done()
		url := fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", strings.TrimSuffix(b.env.Config.Host, "/"), seconds)
		file := filepath.Join(b.c.profileDir, fmt.Sprintf("cpu-kube-apiserver-%s.pprof", what))
		client := *b.meter.APIClient
		client.Timeout = 0 // fetchTo's context bounds it
		if err := fetchTo(ctx, &client, url, file, time.Duration(seconds+30)*time.Second); err != nil {
			say("profile of kube-apiserver: %v", err)
		}
	}()
	return func() {
		wg.Wait()
		b.heapProfiles(ctx, what)
	}
}

// heapProfiles writes the heap profiles of the profiled controllers, named
// after what they show, when profiling.
func (b *bench) heapProfiles(ctx context.Context, what string) {
	if b.pprof == nil {
		return
	}
	if err := os.MkdirAll(b.c.profileDir, 0o755); err != nil {
		say("profile: %v", err)
		return
	}
	for _, name := range profiled {
		url := fmt.Sprintf("http://%s/debug/pprof/heap", b.pprof[name])
		file := filepath.Join(b.c.profileDir, fmt.Sprintf("heap-%s-%s.pprof", name, what))
		if err := fetchTo(ctx, http.DefaultClient, url, file, 30*time.Second); err != nil {
			say("heap profile of %s: %v", name, err)
		}
	}
	say("   profiles written to %s", b.c.profileDir)
}

func fetchTo(ctx context.Context, client *http.Client, url, file string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// sourceState names the commit measured and whether the tree had
// uncommitted changes to the controllers.
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
		"source-controller", "render-controller", "sync-controller", "notification-controller", "image-controller", "pkg", "api").Output()
	if err == nil && len(strings.TrimSpace(string(dirty))) > 0 {
		state += " with uncommitted changes under the controllers, pkg or api"
	}
	return state
}
