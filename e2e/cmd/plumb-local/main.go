// Command plumb-local runs the whole Plumb suite on this machine: what
// `make run` starts once the binaries are built. It starts the environment
// of plumb.dev/e2e/localenv (control plane, pod simulator, NATS, Git server,
// Slack stand-in, the four controllers), deploys the sample from
// deploy/examples, prints where everything is and keeps a status line per
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

	"k8s.io/apimachinery/pkg/types"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/e2e/localenv"
)

func main() {
	var (
		root     = flag.String("root", "", "the Plumb checkout (default: found upward from the working directory)")
		logLevel = flag.String("log-level", "info", "the controllers' --log-level")
		stateDir = flag.String("state-dir", "", "where to keep state and logs (default: a new temporary folder, removed on exit)")
		binDir   = flag.String("bin-dir", "", "where the controllers' binaries are (default: bin/ in the checkout)")
	)
	flag.Parse()
	scr := newScreen(os.Stdout)
	if err := run(localenv.Options{Root: *root, BinDir: *binDir, StateDir: *stateDir, LogLevel: *logLevel}, scr); err != nil {
		scr.Printf("plumb-local: %v\n", err)
		os.Exit(1)
	}
}

func run(opts localenv.Options, scr *screen) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	started := time.Now()
	opts.Progress, opts.SlackOutput = scr, scr
	env, err := localenv.Start(ctx, opts)
	if err != nil {
		return err
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
	demo, err := env.DeployDemo(ctx, localenv.DemoOptions{})
	if err != nil {
		return err
	}
	printWhere(scr, env, demo, time.Since(started))
	return watch(ctx, scr, env, demo)
}

func printWhere(scr *screen, env *localenv.Env, d *localenv.Demo, took time.Duration) {
	c := env.Controllers
	var b strings.Builder
	fmt.Fprintf(&b, "\nPlumb is running (ready in %s). Ctrl-C stops everything and removes %s.\n\n", took.Round(100*time.Millisecond), env.StateDir)
	row := func(k, v string) { fmt.Fprintf(&b, "  %-20s %s\n", k, v) }
	row("kubeconfig", "export KUBECONFIG="+env.Kubeconfig+"   (kube-apiserver "+env.APIServerURL+")")
	row("Git repository", d.RepoURL+"   (push to it: the Git server sends a signed GitHub push webhook)")
	row("receiver", d.WebhookURL+"   (Receiver "+d.Namespace+"/github, token in Secret "+d.Namespace+"/webhook-token)")
	row("Slack stand-in", env.Slack.URL()+"   (what Slack would receive is printed below)")
	row("NATS JetStream", env.NATSURL+"   (stream PLUMB_EVENTS, subjects plumb.events.>)")
	row("artifact servers", "source-controller http://"+c[localenv.SourceController].StorageAddr+"   render-controller http://"+c[localenv.RenderController].StorageAddr)
	for _, name := range localenv.ControllerNames {
		row(name, fmt.Sprintf("metrics http://%s/metrics   health http://%s/readyz   log %s", c[name].MetricsAddr, c[name].HealthAddr, c[name].LogPath))
	}
	row("other logs", env.StateDir+"/logs/ (kube-controller-manager, pod simulator, Git server)")
	fmt.Fprintf(&b, "\nTry:\n")
	fmt.Fprintf(&b, "  git clone %s /tmp/demo && cd /tmp/demo\n", d.RepoURL)
	fmt.Fprintf(&b, "  sed -i 's/Hello from Plumb/Hello again/' configmap.yaml && git commit -qam greet && git push\n")
	fmt.Fprintf(&b, "  kubectl --kubeconfig %s -n %s edit configmap hello-config   # a foreign edit: reverted within a second\n", env.Kubeconfig, d.AppNamespace)
	if cli := filepath.Join(env.Root, "bin", "plumb"); fileExists(cli) {
		fmt.Fprintf(&b, "  KUBECONFIG=%s %s get kustomizations -A\n", env.Kubeconfig, cli)
		fmt.Fprintf(&b, "  KUBECONFIG=%s %s tree kustomization demo -n %s\n", env.Kubeconfig, cli, d.Namespace)
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
		for _, name := range localenv.ControllerNames {
			if !env.Controllers[name].Running() {
				out = append(out, fmt.Sprintf("%-14s %-34s %-12s see %s", "Process", name, "Exited", env.Controllers[name].LogPath))
			}
		}
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
	sort.Strings(urls)
	return urls
}

var _ io.Writer = (*screen)(nil)

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
