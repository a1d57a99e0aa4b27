package localenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"plumb.dev/api/meta"
	"plumb.dev/pkg/app"
	"plumb.dev/pkg/listen"
	"plumb.dev/pkg/options"
	"plumb.dev/pkg/testhelm"
)

// The five controllers, in the order they start.
const (
	SourceController       = "source-controller"
	RenderController       = "render-controller"
	SyncController         = "sync-controller"
	NotificationController = "notification-controller"
	ImageController        = "image-controller"
)

// ControllerNames lists the controllers in start order.
var ControllerNames = []string{SourceController, RenderController, SyncController, NotificationController, ImageController}

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
	// Shards starts, besides the main instance, this many shards of the
	// five controllers (docs/design/sharding.md): Controllers
	// "<controller>-shard1" … each with --watch-label-selector on
	// sharding.plumb.dev/key=shardN, and the main instance with
	// !sharding.plumb.dev/key. 0, the default, starts no shards and
	// passes no selector.
	Shards int
	// Standbys names the controllers that run as a leader and a standby:
	// two processes, "<controller>" and "<controller>-standby" (in each
	// shard), with leader election on and the short Lease of
	// LeaderElection, sharing one storage or receiver socket and folder
	// as a Deployment's replicas share a Service and a volume. The
	// standby starts once the other leads; after a kill either may lead,
	// and Env.Leader says which does. The other controllers run alone
	// with leader election off. Empty, the default: every controller
	// alone (docs/design/sharding.md, "Taking over").
	Standbys []string
	// LeaderElection are the Lease's timings for the controllers of
	// Standbys; default 4s, 3s and 1s.
	LeaderElection LeaderElection
	// StartTimeout bounds Start (and a caller's ctx may end it sooner);
	// default 10 minutes. Start waits for slow steps, saying what it
	// waits for, rather than fail after a short fixed time.
	StartTimeout time.Duration
	// Node is what runs the Pods: NodeSimulated (the default) marks them
	// Running and Ready without running anything (simulator.go);
	// NodeReal starts a kubelet with containerd, kube-proxy and
	// kube-scheduler next to the control plane, and a registry in this
	// process (node.go, docs/design/node.md). A real node needs root and
	// `make node-assets`; NodeUnavailable says why it cannot start.
	// NodeAuto (`make run`'s default) starts a real node when this machine
	// can now, without waiting for another environment's, and the
	// simulator otherwise; Env.NodeFallback says why (nodechoice.go).
	Node string
	// NetworkPolicies runs kube-router's network-policy controller on a
	// real node, so NetworkPolicies are enforced (docs/design/node.md,
	// "NetworkPolicies"); without it they are stored and ignored, as with
	// any CNI without a policy engine. Refused with the pod simulator, and
	// with NodeAuto when no real node can start.
	NetworkPolicies bool
	// NoControllers starts none of the five controllers: Plumb runs as the
	// node's Pods, installed by `plumb install` (e2e/incluster_test.go),
	// and the environment is the cluster around it. Their binaries need
	// not be built.
	NoControllers bool
	// Registry starts the launcher's registry (Env.Registry, with the
	// sample's images) with the pod simulator too, for the sample's image
	// automation (DemoOptions.ImageAutomation); a real node always has
	// it, as it pulls every image from there.
	Registry bool
	// NodeBinDir holds the real node's containerd, runc, crictl and CNI
	// plugins (hack/node.sh); default Root/bin/node. kubelet, kube-proxy
	// and kube-scheduler are in AssetsDir.
	NodeBinDir string
}

// LeaderElection are the timings of a Lease (pkg/options' flags of the
// same names): a standby takes over at most LeaseDuration after the
// leader's last renewal, and tries every RetryPeriod; a leader that
// cannot renew within RenewDeadline gives the Lease up and exits.
type LeaderElection struct {
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
}

// LeaseNamespace holds the Leases of the controllers of Options.Standbys
// (their RUNTIME_NAMESPACE).
const LeaseNamespace = "default"

// StandbySuffix ends the name of a controller's standby process.
const StandbySuffix = "-standby"

// Controller is one of the five controllers, running as a supervised
// process: started again with backoff when it exits. Its ports are bound
// by the launcher and handed to it as inherited sockets, so they are the
// same across restarts.
type Controller struct {
	*Process
	MetricsAddr  string
	HealthAddr   string
	StorageAddr  string // source- and render-controller
	ReceiverAddr string // notification-controller
	// Elects is set for the processes of Options.Standbys: leader
	// election on, so the process may be the leader or wait as a standby.
	Elects bool
	// Lease names the Lease it elects on (in LeaseNamespace) when it
	// Elects: the shard's own, as pkg/app names it.
	Lease string

	// served is the listening socket of the storage or receiver server,
	// which a standby shares with its leader.
	served   *os.File
	progress func(format string, args ...any)
}

// StartAttempts is how many times a controller is started (the first start
// and its restarts) while the launcher waits for it to be ready, before the
// launcher gives up on it.
const StartAttempts = 4

// progressEvery is how often a wait says what it still waits for.
const progressEvery = 15 * time.Second

// WaitReady waits until the controller's /readyz answers 200, for as long
// as ctx allows, saying every 15 seconds what /readyz still reports. It
// fails early when the controller exited StartAttempts times meanwhile,
// with the end of its log.
//
// A controller that Elects is waited for on /healthz instead: a standby
// of source- or render-controller is not ready (its artifact server runs
// on the leader only), and WaitLeader says when one of them leads.
func (c *Controller) WaitReady(ctx context.Context) error {
	probe := "/readyz"
	if c.Elects {
		probe = "/healthz"
	}
	url := "http://" + c.HealthAddr + probe + "?verbose"
	client := &http.Client{Timeout: 2 * time.Second}
	_, first, _ := c.Status()
	began, said := time.Now(), time.Now()
	last := "no answer yet"
	for {
		resp, err := client.Get(url)
		if err == nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = notReady(string(body))
		} else {
			last = err.Error()
		}
		running, restarts, lastExit := c.Status()
		if !running && (restarts-first >= StartAttempts-1 || !c.Supervised) {
			return fmt.Errorf("%s exited %d times while starting (last: %s); the end of its log %s:\n%s",
				c.Name, restarts-first+1, lastExit, c.LogPath, Tail(c.LogPath, 20))
		}
		if time.Since(said) >= progressEvery && c.progress != nil {
			said = time.Now()
			state := "running"
			if !running {
				state = "exited (" + lastExit + "), restarting"
			}
			c.progress("still waiting for %s to be ready (%s; %s): %s", c.Name, time.Since(began).Round(time.Second), state, last)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s was not ready in %s (/readyz: %s); the end of its log %s:\n%s",
				c.Name, time.Since(began).Round(time.Second), last, c.LogPath, Tail(c.LogPath, 20))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// notReady picks the failing checks out of a verbose /readyz answer.
func notReady(body string) string {
	var failed []string
	for _, l := range strings.Split(body, "\n") {
		if strings.HasPrefix(l, "[-]") {
			failed = append(failed, strings.TrimPrefix(l, "[-]"))
		}
	}
	if len(failed) == 0 {
		return strings.TrimSpace(body)
	}
	return strings.Join(failed, "; ")
}

// Restart starts a stopped or killed controller again at once, on the same
// ports, and waits until it is ready.
func (c *Controller) Restart(ctx context.Context) error {
	if !c.Running() {
		if err := c.Start(); err != nil && !strings.Contains(err.Error(), "running already") {
			return err
		}
	}
	return c.WaitReady(ctx)
}

// Env is a running local Plumb: control plane, NATS, Git server, Slack
// stand-in and the five controllers.
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
	// Plugin is the example config-management plugin (plugin.go), and
	// PluginDir the folder of its socket, render-controller's
	// --plugin-dir; nil and "" when its binary is not built.
	Plugin    *Process
	PluginDir string
	// Node is set with Options.Node NodeReal: the node's processes.
	// Registry is set with a real node, which pulls every image from it,
	// and with Options.Registry.
	Node     *Node
	Registry *Registry
	// NodeFallback is why Options.Node NodeAuto runs the pod simulator,
	// "" when a real node runs or another kind was asked for.
	NodeFallback string

	opts Options
	// pauseImage is the sandbox image fillNodeRegistry pushed.
	pauseImage string
	// heldNodeLock is the machine's node lock, taken by NodeAuto's choice
	// and handed to the node as it starts (or closed by Stop).
	heldNodeLock *os.File
	control      *envtest.Environment
	// natsPort is the embedded NATS server's, kept across StopNATS.
	natsPort  int
	reaper    *Process
	simCancel context.CancelFunc
	simDone   chan struct{}
	// sockets are the controllers' listening sockets, held from before
	// each controller starts until Stop.
	sockets []*os.File
	// chartRepos are the Helm sample's chart repositories (DeployDemo),
	// closed by Stop.
	mu         sync.Mutex
	chartRepos []*testhelm.Repo
	stopOnce   sync.Once
	stopErr    error
}

// Start starts everything and returns when each controller answers its
// readiness probe. On error, what did start is stopped again.
func Start(ctx context.Context, opts Options) (env *Env, err error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()
	e := &Env{Root: opts.Root, StateDir: opts.StateDir, Scheme: app.NewScheme(), opts: opts, Controllers: map[string]*Controller{}}
	// A real node's registry fills while the control plane starts.
	var registryFilled chan error
	waitRegistry := func() error {
		if registryFilled == nil {
			return nil
		}
		err := <-registryFilled
		registryFilled = nil
		return err
	}
	defer func() {
		if err != nil {
			_ = waitRegistry()
			_ = e.Stop()
		}
	}()
	for _, dir := range []string{"logs", "tmp"} {
		if err := os.MkdirAll(filepath.Join(e.StateDir, dir), 0o755); err != nil {
			return nil, err
		}
	}
	if err := e.resolveNode(); err != nil {
		return nil, err
	}
	if e.opts.Node == NodeReal {
		// The registry and its images need neither the API server nor
		// the machine's node lock: built and pushed meanwhile, they are
		// off the node's own start (docs/design/node.md, "Time in the
		// tests").
		registryFilled = make(chan error, 1)
		go func() { registryFilled <- e.fillNodeRegistry(ctx) }()
	}
	if err := e.startNATS(); err != nil {
		return nil, err
	}
	if err := e.startControlPlane(ctx); err != nil {
		return nil, err
	}
	if e.opts.Node == NodeReal {
		if err := waitRegistry(); err != nil {
			return nil, err
		}
		if err := e.startNode(ctx); err != nil {
			return nil, err
		}
	} else {
		if err := e.startSimulator(ctx); err != nil {
			return nil, err
		}
		if opts.Registry {
			if err := e.startRegistry(ctx); err != nil {
				return nil, err
			}
		}
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
	if opts.NoControllers {
		// Plumb's controllers will be Pods: they clone through the bridge.
		if e.Node != nil {
			if err := e.advertiseOnBridge(); err != nil {
				return nil, err
			}
		}
		return e, nil
	}
	if err := e.startPlugin(ctx); err != nil {
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
	for _, name := range o.Standbys {
		if !slices.Contains(ControllerNames, name) {
			return fmt.Errorf("a standby of %q: not a controller (%s)", name, strings.Join(ControllerNames, ", "))
		}
	}
	le := &o.LeaderElection
	if le.LeaseDuration == 0 {
		le.LeaseDuration = 4 * time.Second
	}
	if le.RenewDeadline == 0 {
		le.RenewDeadline = 3 * time.Second
	}
	if le.RetryPeriod == 0 {
		le.RetryPeriod = time.Second
	}
	if le.RetryPeriod >= le.RenewDeadline || le.RenewDeadline >= le.LeaseDuration {
		return fmt.Errorf("leader election: want retry period < renew deadline < lease duration, got %s, %s, %s", le.RetryPeriod, le.RenewDeadline, le.LeaseDuration)
	}
	if o.NodeBinDir == "" {
		o.NodeBinDir = filepath.Join(o.Root, "bin", "node")
	}
	switch o.Node {
	case "":
		o.Node = NodeSimulated
	case NodeSimulated, NodeReal, NodeAuto:
	default:
		return fmt.Errorf("node %q: want %q, %q or %q", o.Node, NodeSimulated, NodeReal, NodeAuto)
	}
	if o.NetworkPolicies && o.Node == NodeSimulated {
		return errors.New("NetworkPolicies are enforced by kube-router on a real node; the pod simulator runs no Pod and enforces nothing: ask for a real node")
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = 10 * time.Minute
	}
	var missing []string
	for _, name := range []string{"etcd", "kube-apiserver", "kube-controller-manager"} {
		if _, err := os.Stat(filepath.Join(o.AssetsDir, name)); err != nil {
			missing = append(missing, filepath.Join(o.AssetsDir, name)+" (run `make controlplane-assets`)")
		}
	}
	for _, name := range ControllerNames {
		if o.NoControllers {
			break
		}
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

// startNATS starts an embedded NATS server with JetStream on 127.0.0.1,
// on a free port that StartNATS reuses after an outage.
func (e *Env) startNATS() error {
	e.progress("starting NATS JetStream")
	return e.serveNATS(natsserver.RANDOM_PORT)
}

// serveNATS starts the embedded NATS server on port, its JetStream store
// in the state folder, and waits until it takes connections.
func (e *Env) serveNATS(port int) error {
	srv, err := natsserver.NewServer(&natsserver.Options{
		Host:      "127.0.0.1",
		Port:      port,
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
	e.natsPort = srv.Addr().(*net.TCPAddr).Port
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
		return fmt.Errorf("waiting for the pod simulator's informer to sync: %w", ctx.Err())
	}
}

// startControllers starts the five controllers, each on its own ports,
// and waits for each to be ready.
func (e *Env) startControllers(ctx context.Context) error {
	shards := []string{""}
	for i := 1; i <= e.opts.Shards; i++ {
		shards = append(shards, fmt.Sprintf("shard%d", i))
	}
	// The standbys start once their leaders lead, so that each name
	// says what its process is at the start.
	var started, pairs []string
	var standbys []*Controller
	for _, shard := range shards {
		for _, name := range ControllerNames {
			c, err := e.newController(name, shard, nil)
			if err != nil {
				return err
			}
			if slices.Contains(e.opts.Standbys, name) {
				standby, err := e.newController(name, shard, c)
				if err != nil {
					return err
				}
				standbys = append(standbys, standby)
				pairs = append(pairs, c.Name)
			}
			e.Controllers[c.Name] = c
			started = append(started, c.Name)
			e.progress("starting %s", c.Name)
			if err := c.Start(); err != nil {
				return err
			}
		}
	}
	for _, name := range started {
		e.progress("waiting for %s to be ready", name)
		if err := e.Controllers[name].WaitReady(ctx); err != nil {
			return err
		}
	}
	for _, name := range pairs {
		e.progress("waiting for %s to lead", name)
		if _, err := e.WaitLeader(ctx, name); err != nil {
			return err
		}
	}
	for _, c := range standbys {
		e.Controllers[c.Name] = c
		e.progress("starting %s", c.Name)
		if err := c.Start(); err != nil {
			return err
		}
	}
	for _, c := range standbys {
		e.progress("waiting for %s to be ready", c.Name)
		if err := c.WaitReady(ctx); err != nil {
			return err
		}
	}
	return nil
}

// ShardName is the name of controller's instance of shard ("" for the
// main instance) in Env.Controllers.
func ShardName(controller, shard string) string {
	if shard == "" {
		return controller
	}
	return controller + "-" + shard
}

// newController makes controller's instance of shard; with a leader, its
// standby, which shares the leader's storage or receiver socket and its
// storage folder.
func (e *Env) newController(controller, shard string, leader *Controller) (*Controller, error) {
	name := ShardName(controller, shard)
	if leader != nil {
		name += StandbySuffix
	}
	c := &Controller{
		Process: &Process{
			Name:    name,
			Path:    filepath.Join(e.opts.BinDir, controller),
			LogPath: filepath.Join(e.StateDir, "logs", name+".log"),
			// Their temporary files go with the environment:
			// render-controller leaves its closed source trees to its next
			// start (render-controller/internal/sourcetree).
			Env:        []string{"KUBECONFIG=" + e.Kubeconfig, "TMPDIR=" + filepath.Join(e.StateDir, "tmp")},
			Supervised: true,
		},
		Elects:   slices.Contains(e.opts.Standbys, controller),
		progress: e.progress,
	}
	// socket binds a port for the controller and returns the flag value
	// naming it in the child: file descriptor 3 + its index in ExtraFiles.
	socket := func() (addr, flag string, err error) {
		addr, f, err := reserve()
		if err != nil {
			return "", "", err
		}
		e.sockets = append(e.sockets, f)
		c.ExtraFiles = append(c.ExtraFiles, f)
		return addr, listen.FD(2 + len(c.ExtraFiles)), nil
	}
	metrics, health := "", ""
	var err error
	if c.MetricsAddr, metrics, err = socket(); err != nil {
		return nil, err
	}
	if c.HealthAddr, health, err = socket(); err != nil {
		return nil, err
	}
	c.Args = []string{
		"--metrics-addr=" + metrics,
		"--health-addr=" + health,
		"--nats-url=" + e.NATSURL,
		"--log-encoding=console",
		"--log-level=" + e.opts.LogLevel,
		// A loaded machine may answer the first lists slowly: wait
		// (WaitReady says what for) rather than exit after two minutes.
		"--cache-sync-timeout=10m",
	}
	if c.Elects {
		le := e.opts.LeaderElection
		c.Env = append(c.Env, "RUNTIME_NAMESPACE="+LeaseNamespace)
		c.Args = append(c.Args, "--enable-leader-election=true",
			"--leader-election-lease-duration="+le.LeaseDuration.String(),
			"--leader-election-renew-deadline="+le.RenewDeadline.String(),
			"--leader-election-retry-period="+le.RetryPeriod.String())
	} else {
		// One process per controller: no replica to elect a leader among.
		// With leader election on, a controller killed with SIGKILL (as
		// the e2e test that restarts sync-controller mid-sync does) would
		// hold its Lease until it expired, and its restart would wait.
		c.Args = append(c.Args, "--enable-leader-election=false")
	}
	selector := e.selector(shard)
	if selector != "" {
		c.Args = append(c.Args, "--"+options.WatchLabelSelectorFlag+"="+selector)
	}
	if c.Elects {
		c.Lease = (&options.Manager{WatchLabelSelector: selector}).ShardName(controller + ".plumb.dev")
	}
	// served binds the socket of the storage or receiver server; a
	// standby is handed its leader's: the one address that, like a
	// Service, reaches whichever of the two serves (only the leader does).
	served := func(leaderAddr func(*Controller) string) (string, string, error) {
		if leader == nil {
			addr, flag, err := socket()
			if err == nil {
				c.served = c.ExtraFiles[len(c.ExtraFiles)-1]
			}
			return addr, flag, err
		}
		c.served = leader.served
		c.ExtraFiles = append(c.ExtraFiles, c.served)
		return leaderAddr(leader), listen.FD(2 + len(c.ExtraFiles)), nil
	}
	switch controller {
	case SourceController, RenderController:
		storage := ""
		if c.StorageAddr, storage, err = served(func(l *Controller) string { return l.StorageAddr }); err != nil {
			return nil, err
		}
		data := filepath.Join(e.StateDir, ShardName(controller, shard), "data")
		if err := os.MkdirAll(data, 0o755); err != nil {
			return nil, err
		}
		c.Args = append(c.Args, "--storage-path="+data, "--storage-addr="+storage, "--storage-adv-addr="+c.StorageAddr)
		if controller == RenderController && e.PluginDir != "" {
			c.Args = append(c.Args, "--plugin-dir="+e.PluginDir)
		}
		if controller == SourceController {
			// The Git servers, chart repositories and registries of
			// the tests and make run listen on 127.0.0.1, a loopback
			// address source-controller refuses unless told otherwise.
			c.Args = append(c.Args, "--allowed-private-networks=127.0.0.0/8,::1")
		}
	case SyncController:
		// The shard's render-controller's feed of renders (its leader's
		// address, which its standby shares): each render reaches status
		// with the outcome of its sync, one status write per render.
		if render, ok := e.Controllers[ShardName(RenderController, shard)]; ok && render.StorageAddr != "" {
			c.Args = append(c.Args, "--render-feed-url=http://"+render.StorageAddr+"/renders")
		}
	case NotificationController:
		receiver := ""
		if c.ReceiverAddr, receiver, err = served(func(l *Controller) string { return l.ReceiverAddr }); err != nil {
			return nil, err
		}
		// The Slack stand-in listens on 127.0.0.1, a loopback address
		// that alert delivery refuses unless told otherwise.
		c.Args = append(c.Args, "--receiver-addr="+receiver, "--allow-loopback-provider-addresses")
	case ImageController:
		// The registries of the tests and make run listen on 127.0.0.1,
		// as source-controller's do.
		c.Args = append(c.Args, "--allowed-private-networks=127.0.0.0/8,::1")
	}
	c.Args = append(c.Args, e.opts.ControllerArgs[controller]...)
	return c, nil
}

// selector is the --watch-label-selector of shard's instances ("" for
// the main instance): none without shards.
func (e *Env) selector(shard string) string {
	switch {
	case shard != "":
		return meta.ShardKeyLabel + " in (" + shard + ")"
	case e.opts.Shards > 0:
		return "!" + meta.ShardKeyLabel
	}
	return ""
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
		if e.Plugin != nil {
			if err := e.Plugin.Stop(10 * time.Second); err != nil {
				errs = append(errs, err)
			}
		}
		for _, f := range e.sockets {
			_ = f.Close()
		}
		if e.simCancel != nil {
			e.simCancel()
			<-e.simDone
		}
		// The node before the control plane: the kubelet and kube-proxy
		// stop while the API server still answers.
		if e.Node != nil {
			if err := e.Node.Stop(); err != nil {
				errs = append(errs, fmt.Errorf("stopping the node: %w", err))
			}
		}
		if e.heldNodeLock != nil {
			e.heldNodeLock.Close()
		}
		if e.Registry != nil {
			errs = append(errs, e.Registry.Close())
		}
		if e.KCM != nil {
			if err := e.KCM.Stop(10 * time.Second); err != nil {
				errs = append(errs, err)
			}
		}
		e.mu.Lock()
		for _, r := range e.chartRepos {
			r.Close()
		}
		e.mu.Unlock()
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
