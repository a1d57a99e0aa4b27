package localenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"plumb.dev/pkg/app"
)

// The four controllers, in the order they start.
const (
	SourceController       = "source-controller"
	RenderController       = "render-controller"
	SyncController         = "sync-controller"
	NotificationController = "notification-controller"
)

// ControllerNames lists the controllers in start order.
var ControllerNames = []string{SourceController, RenderController, SyncController, NotificationController}

// Options say where the binaries are and how chatty the environment is.
// Every field has a default.
type Options struct {
	// Root is the Plumb checkout (the folder with go.work); default: found
	// upward from the working directory.
	Root string
	// BinDir holds the controllers' binaries; default Root/bin.
	BinDir string
	// AssetsDir holds etcd, kube-apiserver and kube-controller-manager;
	// default $KUBEBUILDER_ASSETS, else Root/bin/k8s.
	AssetsDir string
	// StateDir holds everything the environment writes; default a new
	// temporary folder. Stop removes it.
	StateDir string
	// Progress receives a line per start-up step; default nowhere.
	Progress io.Writer
	// SlackOutput, when set, receives each message the Slack stand-in gets.
	SlackOutput io.Writer
	// ControllerArgs adds flags to a controller's command line, by name.
	ControllerArgs map[string][]string
	// LogLevel is the controllers' --log-level; default info.
	LogLevel string
}

// Controller is one of the four controllers, running as a process.
type Controller struct {
	*Process
	MetricsAddr  string
	HealthAddr   string
	StorageAddr  string // source- and render-controller
	ReceiverAddr string // notification-controller
}

// WaitReady waits until the controller's /readyz answers.
func (c *Controller) WaitReady(ctx context.Context) error {
	return waitHTTP(ctx, "http://"+c.HealthAddr+"/readyz", c.Process)
}

// Restart starts a stopped or killed controller again on the same ports
// and waits until it is ready.
func (c *Controller) Restart(ctx context.Context) error {
	if err := c.Start(); err != nil {
		return err
	}
	return c.WaitReady(ctx)
}

// Env is a running local Plumb: control plane, NATS, Git server, Slack
// stand-in and the four controllers.
type Env struct {
	Root     string
	StateDir string
	// Kubeconfig is the path of an admin kubeconfig for the API server.
	Kubeconfig   string
	APIServerURL string
	Config       *rest.Config
	// Client is an uncached client with Plumb's scheme.
	Client      client.Client
	Scheme      *runtime.Scheme
	NATSURL     string
	NATS        *natsserver.Server
	Git         *GitServer
	Slack       *SlackSink
	KCM         *Process
	Controllers map[string]*Controller

	opts      Options
	control   *envtest.Environment
	reaper    *Process
	simCancel context.CancelFunc
	simDone   chan struct{}
	stopOnce  sync.Once
	stopErr   error
}

// Start starts everything and returns when each controller answers its
// readiness probe. On error, what did start is stopped again.
func Start(ctx context.Context, opts Options) (env *Env, err error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	e := &Env{Root: opts.Root, StateDir: opts.StateDir, Scheme: app.NewScheme(), opts: opts, Controllers: map[string]*Controller{}}
	defer func() {
		if err != nil {
			_ = e.Stop()
		}
	}()
	if err := os.MkdirAll(filepath.Join(e.StateDir, "logs"), 0o755); err != nil {
		return nil, err
	}
	if err := e.startNATS(); err != nil {
		return nil, err
	}
	if err := e.startControlPlane(ctx); err != nil {
		return nil, err
	}
	if err := e.startSimulator(ctx); err != nil {
		return nil, err
	}
	gitLog, err := os.Create(filepath.Join(e.StateDir, "logs", "git-server.log"))
	if err != nil {
		return nil, err
	}
	if e.Git, err = newGitServer(filepath.Join(e.StateDir, "git"), gitLog); err != nil {
		return nil, err
	}
	if e.Slack, err = newSlackSink(opts.SlackOutput); err != nil {
		return nil, err
	}
	if err := e.startControllers(ctx); err != nil {
		return nil, err
	}
	return e, nil
}

func (o *Options) defaults() error {
	if o.Root == "" {
		root, err := RepoRoot()
		if err != nil {
			return err
		}
		o.Root = root
	}
	if o.BinDir == "" {
		o.BinDir = filepath.Join(o.Root, "bin")
	}
	if o.AssetsDir == "" {
		o.AssetsDir = os.Getenv("KUBEBUILDER_ASSETS")
	}
	if o.AssetsDir == "" {
		o.AssetsDir = filepath.Join(o.Root, "bin", "k8s")
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	if o.LogLevel == "" {
		o.LogLevel = "info"
	}
	var missing []string
	for _, name := range []string{"etcd", "kube-apiserver", "kube-controller-manager"} {
		if _, err := os.Stat(filepath.Join(o.AssetsDir, name)); err != nil {
			missing = append(missing, filepath.Join(o.AssetsDir, name)+" (run `make controlplane-assets`)")
		}
	}
	for _, name := range ControllerNames {
		if _, err := os.Stat(filepath.Join(o.BinDir, name)); err != nil {
			missing = append(missing, filepath.Join(o.BinDir, name)+" (run `make build`)")
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing binaries:\n  %s", strings.Join(missing, "\n  "))
	}
	if o.StateDir == "" {
		dir, err := os.MkdirTemp("", "plumb-local-")
		if err != nil {
			return err
		}
		o.StateDir = dir
	}
	return nil
}

func (e *Env) progress(format string, args ...any) {
	fmt.Fprintf(e.opts.Progress, ">> "+format+"\n", args...)
}

// startNATS starts an embedded NATS server with JetStream on 127.0.0.1.
func (e *Env) startNATS() error {
	e.progress("starting NATS JetStream")
	srv, err := natsserver.NewServer(&natsserver.Options{
		Host:      "127.0.0.1",
		Port:      natsserver.RANDOM_PORT,
		JetStream: true,
		StoreDir:  filepath.Join(e.StateDir, "nats"),
		NoLog:     true,
		NoSigs:    true,
	})
	if err != nil {
		return fmt.Errorf("creating the NATS server: %w", err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(30 * time.Second) {
		srv.Shutdown()
		return errors.New("the embedded NATS server did not become ready in 30s")
	}
	e.NATS, e.NATSURL = srv, srv.ClientURL()
	return nil
}

func (e *Env) startSimulator(ctx context.Context) error {
	logFile, err := os.Create(filepath.Join(e.StateDir, "logs", "pod-simulator.log"))
	if err != nil {
		return err
	}
	sim, err := newPodSimulator(e.Config, logFile)
	if err != nil {
		return err
	}
	simCtx, cancel := context.WithCancel(context.Background())
	e.simCancel, e.simDone = cancel, make(chan struct{})
	go func() {
		defer close(e.simDone)
		defer logFile.Close()
		sim.run(simCtx)
	}()
	select {
	case <-sim.started:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Minute):
		return errors.New("the pod simulator's informer did not sync in a minute")
	}
}

// startControllers starts the four controllers, each on its own ports,
// and waits for each to be ready.
func (e *Env) startControllers(ctx context.Context) error {
	for _, name := range ControllerNames {
		c, err := e.newController(name)
		if err != nil {
			return err
		}
		e.Controllers[name] = c
		e.progress("starting %s", name)
		if err := c.Start(); err != nil {
			return err
		}
	}
	waitCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for _, name := range ControllerNames {
		if err := e.Controllers[name].WaitReady(waitCtx); err != nil {
			return err
		}
	}
	return nil
}

func (e *Env) newController(name string) (*Controller, error) {
	c := &Controller{Process: &Process{
		Name:    name,
		Path:    filepath.Join(e.opts.BinDir, name),
		LogPath: filepath.Join(e.StateDir, "logs", name+".log"),
		Env:     []string{"KUBECONFIG=" + e.Kubeconfig},
	}}
	var err error
	if c.MetricsAddr, err = freeAddr(); err != nil {
		return nil, err
	}
	if c.HealthAddr, err = freeAddr(); err != nil {
		return nil, err
	}
	c.Args = []string{
		"--metrics-addr=" + c.MetricsAddr,
		"--health-addr=" + c.HealthAddr,
		"--nats-url=" + e.NATSURL,
		"--log-encoding=console",
		"--log-level=" + e.opts.LogLevel,
		// One process per controller: no replica to elect a leader among.
		// With leader election on, a controller killed with SIGKILL (as
		// the e2e test that restarts sync-controller mid-sync does) would
		// hold its Lease until it expired, and its restart would wait.
		"--enable-leader-election=false",
	}
	switch name {
	case SourceController, RenderController:
		if c.StorageAddr, err = freeAddr(); err != nil {
			return nil, err
		}
		data := filepath.Join(e.StateDir, name, "data")
		if err := os.MkdirAll(data, 0o755); err != nil {
			return nil, err
		}
		c.Args = append(c.Args, "--storage-path="+data, "--storage-addr="+c.StorageAddr, "--storage-adv-addr="+c.StorageAddr)
	case NotificationController:
		if c.ReceiverAddr, err = freeAddr(); err != nil {
			return nil, err
		}
		// The Slack stand-in listens on 127.0.0.1, a loopback address
		// that alert delivery refuses unless told otherwise.
		c.Args = append(c.Args, "--receiver-addr="+c.ReceiverAddr, "--allow-loopback-provider-addresses")
	}
	c.Args = append(c.Args, e.opts.ControllerArgs[name]...)
	return c, nil
}

// ReceiverURL returns the full URL of a Receiver's webhook path.
func (e *Env) ReceiverURL(webhookPath string) string {
	return "http://" + e.Controllers[NotificationController].ReceiverAddr + webhookPath
}

// Stop stops every process in order (controllers, kube-controller-manager,
// the API server and etcd, NATS), then removes the state folder. It is safe
// to call on a partly started environment and more than once.
func (e *Env) Stop() error {
	e.stopOnce.Do(func() {
		var (
			errs []error
			mu   sync.Mutex
			wg   sync.WaitGroup
		)
		for _, c := range e.Controllers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := c.Stop(10 * time.Second); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if e.simCancel != nil {
			e.simCancel()
			<-e.simDone
		}
		if e.KCM != nil {
			if err := e.KCM.Stop(10 * time.Second); err != nil {
				errs = append(errs, err)
			}
		}
		if e.Git != nil {
			errs = append(errs, e.Git.Close())
		}
		if e.Slack != nil {
			errs = append(errs, e.Slack.Close())
		}
		if e.control != nil {
			if err := e.control.Stop(); err != nil {
				errs = append(errs, fmt.Errorf("stopping the control plane: %w", err))
			}
		}
		if e.NATS != nil {
			e.NATS.Shutdown()
			e.NATS.WaitForShutdown()
		}
		if e.reaper != nil {
			_ = e.reaper.Kill()
		}
		if e.StateDir != "" {
			errs = append(errs, os.RemoveAll(e.StateDir))
		}
		e.stopErr = errors.Join(errs...)
	})
	return e.stopErr
}

// RepoRoot returns the folder holding go.work, searched upward from the
// working directory.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.work found above the working directory; run inside the Plumb checkout")
		}
		dir = parent
	}
}
