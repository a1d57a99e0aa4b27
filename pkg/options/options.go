package options

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/fluxcd/pkg/runtime/leaderelection"
	"github.com/fluxcd/pkg/runtime/logger"
	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"plumb.dev/pkg/artifact"
)

// LeaderElectionFlag turns leader election on (the default) or off.
const LeaderElectionFlag = "enable-leader-election"

// DefaultConcurrent is --concurrent of a controller that sets no default
// of its own (Flux's default).
const DefaultConcurrent = 4

// Manager holds the options of the controller-runtime manager that every
// controller runs: probes, metrics, concurrency, leader election, logging
// and the API client.
type Manager struct {
	MetricsAddr string
	HealthAddr  string
	// Concurrent is --concurrent; a value set before BindFlags is the
	// flag's default (DefaultConcurrent when unset).
	Concurrent     int
	LeaderElection leaderelection.Options
	Logging        logger.Options
	// QPS and Burst bound the API client when the API server has no
	// priority-and-fairness flow control; with it, the client does not
	// throttle itself (the server does).
	QPS   float32
	Burst int
	// CacheSyncTimeout is how long a controller waits for its caches'
	// first lists before the process exits with an error.
	CacheSyncTimeout time.Duration
	// PprofAddr is where controller-runtime serves net/http/pprof; empty
	// (the default) serves nothing.
	PprofAddr string
	// WatchLabelSelector is Flux's --watch-label-selector: the instance
	// watches and reconciles only the objects of its controller's own
	// kinds whose labels match it (a shard, docs/design/sharding.md);
	// empty watches them all.
	WatchLabelSelector string
	// OnlyRuntimeNamespace is Flux's --watch-all-namespaces=false: the
	// instance watches and reconciles only the objects of its own kinds
	// in $RUNTIME_NAMESPACE. Stored inverted so that the zero value (a
	// Manager a test builds) watches every namespace, as the flag's
	// default does.
	OnlyRuntimeNamespace bool
}

// WatchAllNamespacesFlag names the flag of Manager.OnlyRuntimeNamespace.
const WatchAllNamespacesFlag = "watch-all-namespaces"

// WatchLabelSelectorFlag names the flag of Manager.WatchLabelSelector.
const WatchLabelSelectorFlag = "watch-label-selector"

// BindFlags registers the manager flags on fs.
func (o *Manager) BindFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.MetricsAddr, "metrics-addr", ":8080",
		"The address the Prometheus /metrics endpoint binds to; 0 disables it; fd:N serves on the listening socket inherited as file descriptor N.")
	fs.StringVar(&o.HealthAddr, "health-addr", ":9440",
		"The address the /healthz and /readyz probes bind to; fd:N serves on the listening socket inherited as file descriptor N.")
	concurrent := o.Concurrent
	if concurrent < 1 {
		concurrent = DefaultConcurrent
	}
	fs.IntVar(&o.Concurrent, "concurrent", concurrent,
		"The number of objects reconciled at the same time.")
	fs.DurationVar(&o.CacheSyncTimeout, "cache-sync-timeout", 2*time.Minute,
		"How long a controller waits for the first list of each kind it watches before the process exits with an error (and, in a cluster, is restarted); "+
			"raise it where the API server is slow to answer at start.")
	o.LeaderElection.BindFlags(fs)
	// Flux's flags, with one default changed: leader election is on, so
	// that two replicas never reconcile, write artifacts or serve them at
	// the same time. A run outside a cluster passes
	// --enable-leader-election=false (or sets RUNTIME_NAMESPACE, where the
	// Lease is kept).
	enable := fs.Lookup(LeaderElectionFlag)
	enable.DefValue = "true"
	_ = enable.Value.Set("true")
	enable.Usage = "Elect a leader among the replicas through a Lease in RUNTIME_NAMESPACE (in a cluster: the pod's namespace); only the leader reconciles and serves artifacts. " +
		"Turn it off for a single process outside a cluster."
	o.Logging.BindFlags(fs)
	fs.Float32Var(&o.QPS, "kube-api-qps", 50,
		"The most queries per second sent to the API server when it has no priority-and-fairness flow control.")
	fs.IntVar(&o.Burst, "kube-api-burst", 300,
		"The burst of queries sent to the API server when it has no priority-and-fairness flow control.")
	fs.StringVar(&o.PprofAddr, "pprof-addr", "",
		"The address net/http/pprof's profiles are served on (/debug/pprof/); empty, the default, serves none. Bind it to 127.0.0.1: profiles are not authenticated.")
	fs.StringVar(&o.WatchLabelSelector, WatchLabelSelectorFlag, "",
		"Reconcile only the objects of this controller's kinds whose labels match this selector, e.g. 'sharding.plumb.dev/key in (shard1)' on a shard "+
			"and '!sharding.plumb.dev/key' on the main instance; empty reconciles all. The leader-election Lease is then the shard's own.")
	fs.VarPF(invertedBool{&o.OnlyRuntimeNamespace}, WatchAllNamespacesFlag, "",
		"Reconcile the objects of this controller's kinds in every namespace; false reconciles only those in $RUNTIME_NAMESPACE (the pod's namespace).").
		NoOptDefVal = "true"
}

// invertedBool is a boolean flag that stores the opposite of its value.
type invertedBool struct{ p *bool }

func (b invertedBool) String() string {
	if b.p == nil {
		return "true"
	}
	return strconv.FormatBool(!*b.p)
}

func (b invertedBool) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	*b.p = !v
	return nil
}

func (b invertedBool) Type() string { return "bool" }

// WatchSelector returns the parsed --watch-label-selector, or a selector
// of everything when it is empty.
func (o *Manager) WatchSelector() (labels.Selector, error) {
	if o.WatchLabelSelector == "" {
		return labels.Everything(), nil
	}
	// Parsed the way Flux parses its flag, so that a selector written for
	// Flux means the same here.
	ls, err := metav1.ParseToLabelSelector(o.WatchLabelSelector)
	if err != nil {
		return nil, fmt.Errorf("--%s %q: %w", WatchLabelSelectorFlag, o.WatchLabelSelector, err)
	}
	sel, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		return nil, fmt.Errorf("--%s %q: %w", WatchLabelSelectorFlag, o.WatchLabelSelector, err)
	}
	return sel, nil
}

// ShardName returns base for an instance without a selector and base
// suffixed with a short hash of the selector for a shard (as Flux names
// its Leases): the name of what each shard must own alone, its
// leader-election Lease and notification-controller's durable JetStream
// consumer. The main instance, started with "!sharding.plumb.dev/key", is
// a shard of its own here.
func (o *Manager) ShardName(base string) string {
	if o.WatchLabelSelector == "" {
		return base
	}
	return leaderelection.GenerateID(base, o.WatchLabelSelector)
}

// Validate reports option values that cannot work.
func (o *Manager) Validate() error {
	if o.Concurrent < 1 {
		return fmt.Errorf("--concurrent must be at least 1, got %d", o.Concurrent)
	}
	if o.CacheSyncTimeout < 0 {
		return fmt.Errorf("--cache-sync-timeout must not be negative, got %s", o.CacheSyncTimeout)
	}
	if _, err := o.WatchSelector(); err != nil {
		return err
	}
	return nil
}

// Reconcile holds the flags of the controllers whose objects refer to other
// objects (render-, sync- and notification-controller): the same names
// for the same things in every binary.
type Reconcile struct {
	// NoCrossNamespaceRefs refuses every reference into another namespace
	// than the referring object's.
	NoCrossNamespaceRefs bool
	// RequeueDependency is how soon an object waiting on another — a
	// source without an artifact, a dependsOn not Ready, a Provider or
	// Secret not there yet — is looked at again when no watch event
	// brings it back first.
	RequeueDependency time.Duration
}

// BindFlags registers the reconcile flags on fs.
func (o *Reconcile) BindFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.NoCrossNamespaceRefs, "no-cross-namespace-refs", false,
		"Refuse every reference to an object in another namespace: a Kustomization's sourceRef, dependsOn and healthChecks, a Receiver's resources, an Alert's event sources.")
	fs.DurationVar(&o.RequeueDependency, "requeue-dependency", 10*time.Second,
		"How soon an object waiting on another (a source without an artifact, a dependsOn not Ready, a Provider or Secret missing) is checked again.")
}

// Validate reports option values that cannot work.
func (o *Reconcile) Validate() error {
	if o.RequeueDependency <= 0 {
		return fmt.Errorf("--requeue-dependency must be positive, got %s", o.RequeueDependency)
	}
	return nil
}

// NATS holds the options of the connection to the NATS JetStream server
// that events are published to.
type NATS struct {
	URL string
	// Auth is how the client proves who it is and checks the server.
	Auth NATSAuth
	// Stream is the JetStream stream that holds the events.
	Stream string
	// StreamMaxAge bounds how long an event is kept.
	StreamMaxAge time.Duration
	// StreamMaxBytes bounds the stream's size.
	StreamMaxBytes int64
	// StreamReplicas is how many servers of a NATS cluster keep a copy of
	// the stream (docs/design/nats-cluster.md).
	StreamReplicas int
	// QueueSize bounds the in-memory queue of events waiting for NATS.
	QueueSize int
}

// DefaultStream is the JetStream stream of Plumb's events unless
// --nats-stream names another.
const DefaultStream = "PLUMB_EVENTS"

// MaxStreamReplicas is the most copies of a stream JetStream keeps.
const MaxStreamReplicas = 5

// BindFlags registers the NATS flags of a publishing controller on fs.
func (o *NATS) BindFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.URL, "nats-url", "nats://127.0.0.1:4222",
		"The NATS server that events are published to; empty disables publishing.")
	fs.StringVar(&o.Stream, "nats-stream", DefaultStream,
		"The JetStream stream that holds the events.")
	o.bindStreamFlags(fs)
	o.Auth.BindFlags(fs)
}

// BindReaderFlags registers the flags of a program that only reads the
// stream (the UI): the server, the stream's name and the credentials, not
// the stream's bounds and replicas or the publish queue, which it does not
// use.
func (o *NATS) BindReaderFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.URL, "nats-url", "nats://127.0.0.1:4222",
		"The NATS server whose event stream is read; empty disables the event feed.")
	fs.StringVar(&o.Stream, "nats-stream", DefaultStream,
		"The JetStream stream that holds the events.")
	o.Auth.BindFlags(fs)
}

// bindStreamFlags registers the stream's bounds and replicas and the
// publish queue.
func (o *NATS) bindStreamFlags(fs *pflag.FlagSet) {
	fs.DurationVar(&o.StreamMaxAge, "nats-stream-max-age", 72*time.Hour,
		"How long the stream keeps an event.")
	fs.Int64Var(&o.StreamMaxBytes, "nats-stream-max-bytes", 256<<20,
		"The most bytes the stream keeps; the oldest events go first.")
	fs.IntVar(&o.StreamReplicas, "nats-stream-replicas", 1,
		"How many servers of a NATS cluster keep a copy of the stream (1 to 5; 3 survives the loss of one server).")
	fs.IntVar(&o.QueueSize, "events-queue-size", 1000,
		"The most events held in memory while NATS is unreachable; the oldest are dropped beyond it.")
}

// Validate reports option values that cannot work.
func (o *NATS) Validate() error {
	if o.URL == "" {
		return nil
	}
	// A cluster is given as a comma-separated list, as nats.go takes it.
	for _, one := range strings.Split(o.URL, ",") {
		if u, err := url.Parse(strings.TrimSpace(one)); err == nil && u.User != nil && o.Auth.Enabled() {
			return errors.New("--nats-url carries credentials and so do the --nats-* authentication flags: give them once, in the flags")
		}
	}
	// JetStream keeps at most five copies of a stream; zero is the
	// server's default (one), for callers that fill NATS in code.
	if o.StreamReplicas < 0 || o.StreamReplicas > MaxStreamReplicas {
		return fmt.Errorf("--nats-stream-replicas must be between 1 and %d, got %d", MaxStreamReplicas, o.StreamReplicas)
	}
	return o.Auth.Validate()
}

// Storage holds the options of a controller's artifact storage and the HTTP
// server that serves it.
type Storage struct {
	Path string
	Addr string
	// AdvertiseAddr is the host[:port] written into artifact URLs; defaults
	// to Addr.
	AdvertiseAddr    string
	RetentionRecords int
	// The bounds of the artifact server's connections; see the defaults in
	// pkg/artifact for why they are what they are.
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	WriteTimeout      time.Duration
	IdleTimeout       time.Duration
	MaxConnections    int
}

// BindFlags registers the storage flags on fs.
func (o *Storage) BindFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Path, "storage-path", "/data",
		"The folder artifacts are stored in.")
	fs.StringVar(&o.Addr, "storage-addr", ":9090",
		"The address the artifact HTTP server binds to; fd:N serves on the listening socket inherited as file descriptor N.")
	fs.StringVar(&o.AdvertiseAddr, "storage-adv-addr", "",
		"The host[:port] put in artifact URLs, e.g. the Service name; defaults to --storage-addr.")
	fs.IntVar(&o.RetentionRecords, "artifact-retention-records", 2,
		"How many artifacts are kept per object; older ones are deleted.")
	fs.DurationVar(&o.ReadHeaderTimeout, "storage-read-header-timeout", artifact.DefaultReadHeaderTimeout,
		"How long the artifact server waits for a request's headers.")
	fs.DurationVar(&o.ReadTimeout, "storage-read-timeout", artifact.DefaultReadTimeout,
		"How long the artifact server waits for a whole request.")
	fs.DurationVar(&o.WriteTimeout, "storage-write-timeout", artifact.DefaultWriteTimeout,
		"How long the artifact server takes at most to send a response; it must let the largest artifact reach the slowest legitimate client.")
	fs.DurationVar(&o.IdleTimeout, "storage-idle-timeout", artifact.DefaultIdleTimeout,
		"How long the artifact server keeps an unused keep-alive connection open.")
	fs.IntVar(&o.MaxConnections, "storage-max-connections", artifact.DefaultMaxConnections,
		"The most connections the artifact server serves at once; further ones wait until one closes.")
}

// ServerOptions returns the bounds of the artifact server, for
// artifact.NewServer.
func (o *Storage) ServerOptions() []artifact.ServerOption {
	return []artifact.ServerOption{
		artifact.WithReadHeaderTimeout(o.ReadHeaderTimeout),
		artifact.WithReadTimeout(o.ReadTimeout),
		artifact.WithWriteTimeout(o.WriteTimeout),
		artifact.WithIdleTimeout(o.IdleTimeout),
		artifact.WithMaxConnections(o.MaxConnections),
	}
}

// Validate reports option values that cannot work.
func (o *Storage) Validate() error {
	if o.Path == "" {
		return fmt.Errorf("--storage-path must not be empty")
	}
	if o.RetentionRecords < 1 {
		return fmt.Errorf("--artifact-retention-records must be at least 1, got %d", o.RetentionRecords)
	}
	for _, t := range []struct {
		flag string
		d    time.Duration
	}{
		{"--storage-read-header-timeout", o.ReadHeaderTimeout},
		{"--storage-read-timeout", o.ReadTimeout},
		{"--storage-write-timeout", o.WriteTimeout},
		{"--storage-idle-timeout", o.IdleTimeout},
	} {
		if t.d <= 0 {
			return fmt.Errorf("%s must be positive, got %s", t.flag, t.d)
		}
	}
	if o.MaxConnections < 1 {
		return fmt.Errorf("--storage-max-connections must be at least 1, got %d", o.MaxConnections)
	}
	return nil
}
