// Command plumb-local runs the whole Plumb suite on this machine: what
// `make run` starts once the binaries are built. It starts the environment
// of plumb.dev/e2e/localenv (control plane, pod simulator, NATS, Git server,
// Slack stand-in, the five controllers), deploys the sample from
// deploy/examples (with its Helm part: a chart repository of its own, a
// HelmRepository and a HelmRelease), prints where everything is and keeps a status line per
// object up to date until Ctrl-C, which stops every process and removes the
// temporary state.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/e2e/localenv"
	"plumb.dev/pkg/options"
	"plumb.dev/ui/server"
)

func main() {
	var (
		root     = flag.String("root", "", "the Plumb checkout (default: found upward from the working directory)")
		logLevel = flag.String("log-level", "info", "the controllers' --log-level")
		stateDir = flag.String("state-dir", "", "where to keep state and logs (default: a new temporary folder, removed on exit)")
		binDir   = flag.String("bin-dir", "", "where the controllers' binaries are (default: bin/ in the checkout)")
		timeout  = flag.Duration("start-timeout", 10*time.Minute, "how long the suite may take to come up whole (every controller ready, the sample Ready) before plumb-local gives up, stops everything and exits 1")
		check    = flag.Bool("exit-when-ready", false, "stop everything and exit 0 as soon as the suite is up whole (what hack/starts.sh runs)")
		uiListen = flag.String("ui-listen", "127.0.0.1:0", "the loopback address of the web UI (default: a free port)")
		shards   = flag.Int("shards", 0, "also run this many shards of the five controllers (sharding.plumb.dev/key=shard1 …; docs/design/sharding.md)")
		node     = flag.String("node", localenv.NodeAuto, "what runs the Pods: \"real\" (kubelet, containerd, kube-proxy and kube-scheduler; root and `make node-assets`; docs/design/node.md), \"simulated\" (the pod simulator), or \"auto\": the real node when this machine can start one now, else the simulator, saying why")
		netpol   = flag.Bool("network-policies", false, "enforce NetworkPolicies: run kube-router's network-policy controller with the real node (refused without one; docs/design/node.md, \"NetworkPolicies\")")
		standbys = flag.String("standbys", "", "comma-separated controllers to run as a leader and a standby with leader election on, e.g. sync-controller,render-controller (docs/design/sharding.md, \"Taking over\")")
	)
	flag.Parse()
	scr := newScreen(os.Stdout)
	// The controllers bound tenants as deploy/ does: the sample's
	// Kustomization and HelmRelease name a ServiceAccount with the rights
	// they need (deploy/examples/plumb).
	opts := localenv.Options{Root: *root, BinDir: *binDir, StateDir: *stateDir, LogLevel: *logLevel, StartTimeout: *timeout, Shards: *shards,
		Node: *node, NetworkPolicies: *netpol, ControllerArgs: localenv.TenancyArgs(), Registry: true}
	if *standbys != "" {
		opts.Standbys = strings.Split(*standbys, ",")
	}
	if err := run(opts, *check, *uiListen, scr); err != nil {
		scr.Printf("plumb-local: %v\n", err)
		os.Exit(1)
	}
}

func run(opts localenv.Options, exitWhenReady bool, uiListen string, scr *screen) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	started := time.Now()
	// The whole start (processes, the sample and its Ready) has one bound.
	startCtx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()
	opts.Progress, opts.SlackOutput = scr, scr
	env, err := localenv.Start(startCtx, opts)
	if err != nil {
		return fmt.Errorf("the suite did not come up: %w", err)
	}
	defer func() {
		scr.SetBlock(nil)
		scr.Printf(">> stopping every process\n")
		if err := env.Stop(); err != nil {
			scr.Printf("plumb-local: stopping: %v\n", err)
			return
		}
		scr.Printf(">> stopped; removed %s\n", env.StateDir)
	}()

	scr.Printf(">> deploying the sample from %s\n", localenv.DemoAppDir)
	// The plugin part when the example plugin runs (hack/run.sh builds it).
	demo, err := env.DeployDemo(startCtx, localenv.DemoOptions{Helm: true, ImageAutomation: true, Plugin: env.Plugin != nil})
	if err != nil {
		return fmt.Errorf("the suite did not come up: %w%s", err, processReport(env))
	}
	scr.Printf(">> waiting for the sample's GitRepository, Kustomizations, Receiver, Provider, Alert, HelmRepository and HelmRelease to be Ready\n")
	if err := env.WaitDemoReady(startCtx, demo); err != nil {
		return fmt.Errorf("the suite did not come up whole: %w%s", err, processReport(env))
	}
	if exitWhenReady {
		printWhere(scr, env, demo, "", time.Since(started))
		return nil
	}
	// The web UI, in this process, as `plumb ui` runs it: kubeconfig mode
	// with the suite's admin identity. It makes a client per sign-in, and
	// controller-runtime warns about a logger never set once a process is
	// 30 s old: the launcher's screen shows what matters itself.
	ctrllog.SetLogger(logr.Discard())
	ui, err := server.New(ctx, server.Options{Listen: uiListen, Auth: server.AuthKubeconfig, Config: env.Config,
		NATS: options.NATS{URL: env.NATSURL}})
	if err != nil {
		return fmt.Errorf("starting the web UI: %w", err)
	}
	go func() {
		if err := ui.Run(ctx); err != nil {
			scr.Printf("plumb-local: the web UI stopped: %v\n", err)
		}
	}()
	// The sign-in address, with its one-time secret, is printed on this
	// terminal only: never passed to another process on a command line,
	// which any local user can read (/proc/*/cmdline). plumb-local opens
	// no browser; `plumb ui` does, through a private file (docs/cli.md).
	printWhere(scr, env, demo, ui.LoginURL(), time.Since(started))
	return watch(ctx, scr, env, demo)
}

func printWhere(scr *screen, env *localenv.Env, d *localenv.Demo, uiURL string, took time.Duration) {
	c := env.Controllers
	var b strings.Builder
	fmt.Fprintf(&b, "\nPlumb is running (ready in %s). Ctrl-C stops everything and removes %s.\n\n", took.Round(100*time.Millisecond), env.StateDir)
	row := func(k, v string) { fmt.Fprintf(&b, "  %-20s %s\n", k, v) }
	if uiURL != "" {
		row("web UI", uiURL+"   (the admin's identity; the sign-in secret is good once: `plumb ui` for another)")
	}
	row("node", nodeSummary(env))
	row("kubeconfig", "export KUBECONFIG="+env.Kubeconfig+"   (kube-apiserver "+env.APIServerURL+")")
	row("Git repository", d.RepoURL+"   (push to "+d.PushURL+": the Git server sends a signed GitHub push webhook)")
	row("receiver", d.WebhookURL+"   (Receiver "+d.Namespace+"/github, token in Secret "+d.Namespace+"/webhook-token)")
	if d.WebImage != "" {
		row("image registry", d.WebImage+"   (plain HTTP; ImageRepository "+d.Namespace+"/web scans it, ImagePolicy "+d.Namespace+"/web picks the highest semver tag)")
		row("registry webhook", d.RegistryWebhookURL+"   (Receiver "+d.Namespace+"/registry, Docker Hub's format: a push scans at once)")
		row("image automation", "ImageUpdateAutomation "+d.Namespace+"/demo commits the new tag at the marker of deployment.yaml (from "+localenv.DemoAppDir+") as "+localenv.DemoBotName+", signed")
	}
	row("chart repository", d.ChartRepoURL+"   (serves "+localenv.DemoChartDir+"; HelmRelease "+d.Namespace+"/hello installs it into "+d.HelmNamespace+")")
	row("Slack stand-in", env.Slack.URL()+"   (what Slack would receive is printed below)")
	row("NATS JetStream", env.NATSURL+"   (stream PLUMB_EVENTS, subjects plumb.events.>)")
	row("artifact servers", "source-controller http://"+c[localenv.SourceController].StorageAddr+"   render-controller http://"+c[localenv.RenderController].StorageAddr)
	for _, name := range localenv.ControllerNames {
		row(name, fmt.Sprintf("metrics http://%s/metrics   health http://%s/readyz   log %s", c[name].MetricsAddr, c[name].HealthAddr, c[name].LogPath))
	}
	row("other logs", env.StateDir+"/logs/ (kube-controller-manager, pod simulator, Git server, registry)")
	fmt.Fprintf(&b, "\nTry:\n")
	for _, c := range env.TryCommands(d, plumbCLI(env), filepath.Join(env.StateDir, "demo")) {
		fmt.Fprintf(&b, "  %s\n", c)
	}
	fmt.Fprintf(&b, "\n")
	scr.Printf("%s", b.String())
}

// watch redraws the status lines every second and prints each new artifact
// URL once, until ctx ends.
func watch(ctx context.Context, scr *screen, env *localenv.Env, d *localenv.Demo) error {
	seen := map[string]bool{}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		for _, u := range artifactURLs(ctx, env, d) {
			if !seen[u] {
				seen[u] = true
				scr.Printf("artifact ▸ %s\n", u)
			}
		}
		lines := env.DemoStatus(ctx, d)
		out := make([]string, 0, len(lines)+1)
		out = append(out, fmt.Sprintf("── status at %s %s", time.Now().Format("15:04:05"), strings.Repeat("─", 40)))
		for _, l := range lines {
			out = append(out, l.String())
		}
		out = append(out, processLines(env)...)
		scr.SetBlock(out)
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

func artifactURLs(ctx context.Context, env *localenv.Env, d *localenv.Demo) []string {
	var urls []string
	repo := &sourcev1.GitRepository{}
	if err := env.Client.Get(ctx, types.NamespacedName{Namespace: d.Namespace, Name: "demo"}, repo); err == nil && repo.Status.Artifact != nil {
		urls = append(urls, "source-controller "+repo.Status.Artifact.URL)
	}
	k := &kustomizev1.Kustomization{}
	if err := env.Client.Get(ctx, types.NamespacedName{Namespace: d.Namespace, Name: "demo"}, k); err == nil && k.Status.RenderedArtifact != nil {
		urls = append(urls, "render-controller "+k.Status.RenderedArtifact.URL)
	}
	hr := &helmv2.HelmRelease{}
	if err := env.Client.Get(ctx, types.NamespacedName{Namespace: d.Namespace, Name: "hello"}, hr); err == nil && hr.Status.RenderedArtifact != nil {
		urls = append(urls, "render-controller "+hr.Status.RenderedArtifact.URL)
	}
	sort.Strings(urls)
	return urls
}

// processLines are a status line per controller: running or exited, how
// often it was restarted and how it last exited.
func processLines(env *localenv.Env) []string {
	var out []string
	for _, name := range localenv.ControllerNames {
		c := env.Controllers[name]
		running, restarts, lastExit := c.Status()
		state, detail := "Running", fmt.Sprintf("restarts %d", restarts)
		if !running {
			state = "Exited"
			detail += ", restarting with backoff"
		}
		if lastExit != "" {
			detail += ", last exit " + lastExit + ", log " + c.LogPath
		}
		out = append(out, localenv.StatusLine{Kind: "Process", Name: name, Status: state, Detail: detail}.String())
	}
	return out
}

// processReport is the state of the controllers, with the end of the log
// of each one that was restarted, for the error of a start that failed.
func processReport(env *localenv.Env) string {
	var b strings.Builder
	for _, l := range processLines(env) {
		fmt.Fprintf(&b, "\n  %s", l)
	}
	for _, name := range localenv.ControllerNames {
		c := env.Controllers[name]
		if _, restarts, _ := c.Status(); restarts > 0 {
			fmt.Fprintf(&b, "\nthe end of %s:\n%s", c.LogPath, localenv.Tail(c.LogPath, 20))
		}
	}
	return b.String()
}

// nodeSummary says what runs the sample's Pods, and why not a real node
// when plumb-local fell back to the simulator.
func nodeSummary(env *localenv.Env) string {
	switch {
	case env.Node == nil && env.NodeFallback != "":
		return "the pod simulator (no container runs): " + env.NodeFallback
	case env.Node == nil:
		return "the pod simulator (no container runs)"
	case env.Node.KubeRouter != nil && env.Node.KubeRouter.Running():
		return "a real node, " + localenv.NodeName + " (kubelet, containerd), NetworkPolicies enforced by kube-router"
	}
	return "a real node, " + localenv.NodeName + " (kubelet, containerd); NetworkPolicies stored, not enforced (-network-policies enforces them)"
}

// plumbCLI is the plumb command line next to the controllers, "" when it
// was not built.
func plumbCLI(env *localenv.Env) string {
	cli, err := filepath.Abs(filepath.Join(env.Root, "bin", "plumb"))
	if err != nil || !fileExists(cli) {
		return ""
	}
	return cli
}

var _ io.Writer = (*screen)(nil)

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
