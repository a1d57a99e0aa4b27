package app

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"reflect"
	"strings"
	"time"

	"github.com/fluxcd/pkg/runtime/logger"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"plumb.dev/pkg/artifact"
	"plumb.dev/pkg/kinds"
	"plumb.dev/pkg/options"
	"plumb.dev/pkg/typedwatch"
	"plumb.dev/pkg/version"
)

// NewScheme returns a scheme with the Kubernetes built-in kinds and all of
// Plumb's API groups (kinds.NewScheme).
func NewScheme() *runtime.Scheme { return kinds.NewScheme() }

// SetupLogger installs the logger the options describe as controller-runtime's
// and klog's logger, and logs the build the program is (pkg/version), so a
// log says which image it came from.
func SetupLogger(opts options.Manager) {
	logger.SetLogger(logger.NewLogger(opts.Logging))
	ctrl.Log.Info("Plumb build", "version", version.Get().String())
}

// RESTConfig returns the API client configuration from the usual places
// (--kubeconfig, KUBECONFIG, in-cluster). When the API server runs
// priority-and-fairness flow control the client does not throttle itself;
// otherwise the options' QPS and burst apply.
func RESTConfig(opts options.Manager) *rest.Config {
	cfg := ctrl.GetConfigOrDie()
	if FlowControlled(cfg) {
		cfg.QPS, cfg.Burst = -1, -1
	} else {
		cfg.QPS, cfg.Burst = opts.QPS, opts.Burst
	}
	return cfg
}

// FlowControlled reports whether the API server answers with the headers
// of priority-and-fairness flow control. Any answer carries them, even a 404,
// so a HEAD of a small endpoint is enough.
func FlowControlled(cfg *rest.Config) bool {
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodHead, strings.TrimSuffix(cfg.Host, "/")+"/livez/ping", nil)
	if err != nil {
		return false
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.Header.Get("X-Kubernetes-PF-FlowSchema-UID") != "" || resp.Header.Get("X-Kubernetes-PF-PriorityLevel-UID") != ""
}

// RuntimeNamespaceEnv names the environment variable holding the
// namespace the controller runs in (deploy/ sets it from the pod's
// metadata.namespace); the leader-election Lease lives there.
const RuntimeNamespaceEnv = "RUNTIME_NAMESPACE"

// NewManager returns a manager named after the controller with metrics,
// health probes and leader election set from the options. The probes answer
// as soon as the manager runs; controllers add their own readiness checks
// (AddArtifactServer adds the artifact server's). An address of fd:N
// serves on the listening socket inherited as file descriptor N
// (plumb.dev/pkg/listen), as the local launcher hands them over.
//
// Every controller of the manager recovers a panic of its reconciler: the
// reconcile fails with "panic: … [recovered]", is logged at error level
// with the stack and retried with backoff, and
// controller_runtime_reconcile_panics_total counts it; the process goes on.
//
// With leader election on, the Lease is kept in $RUNTIME_NAMESPACE, or in
// the pod's namespace when that is unset in a cluster; outside a cluster
// one of the two is needed, or --enable-leader-election=false.
//
// ownKinds are the kinds the controller reconciles (an empty object of
// each): with --watch-label-selector, the manager's cache holds only those
// of them whose labels match, so the instance reconciles its shard alone;
// every other kind it reads or watches stays whole (docs/design/sharding.md).
// With --watch-all-namespaces=false, the same cache holds only those in
// $RUNTIME_NAMESPACE. A selector or namespace without kinds to apply it
// to is refused.
func NewManager(name string, cfg *rest.Config, scheme *runtime.Scheme, opts options.Manager, ownKinds ...ctrlclient.Object) (ctrl.Manager, error) {
	return NewTrimmingManager(name, cfg, scheme, opts, nil, ownKinds...)
}

// Trim is a controller's own cut of what its cache keeps of one kind,
// beyond the managedFields every cache drops: Transform is handed each
// object of Object's kind as decoded from a list or watch, before the
// cache stores it, and returns it with what the controller never reads
// removed (it may change the object in place). The managedFields are
// stripped before Transform runs.
//
// What the cache holds is all the controller's reads see, through its
// client too, so a Transform may drop only fields no code of the
// controller reads, and the controller must write the kind only by
// server-side apply of its own fields (pkg/reconcile's ApplyStatus, its
// finalizer): an update of a trimmed copy would erase what the cut left
// out.
type Trim struct {
	Object    ctrlclient.Object
	Transform toolscache.TransformFunc
}

// NewTrimmingManager is NewManager with trims: for each kind of trims, the
// cache keeps what its Transform leaves (render-controller keeps of a
// Kustomization's status only what it reads).
func NewTrimmingManager(name string, cfg *rest.Config, scheme *runtime.Scheme, opts options.Manager, trims []Trim, ownKinds ...ctrlclient.Object) (ctrl.Manager, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	tuneGC()
	leNamespace := os.Getenv(RuntimeNamespaceEnv)
	byObject, err := ownKindsCache(opts, ownKinds, leNamespace)
	if err != nil {
		return nil, fmt.Errorf("creating the %s manager: %w", name, err)
	}
	if byObject, err = withTrims(byObject, trims); err != nil {
		return nil, fmt.Errorf("creating the %s manager: %w", name, err)
	}
	// A shard's own Lease, so that shards do not elect one leader among
	// them; without a selector, the name it always had.
	leaseID := opts.ShardName(name + ".plumb.dev")
	recoverPanic := true
	// An inherited socket (fd:N) is served by Plumb's own servers below;
	// controller-runtime's bind an address.
	metricsAddr, healthAddr := opts.MetricsAddr, opts.HealthAddr
	if inherited(metricsAddr) {
		metricsAddr = "0"
	}
	if inherited(healthAddr) {
		healthAddr = "0"
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme: scheme,
		// The controller's own kinds are listed and watched with their
		// events decoded in one pass (pkg/typedwatch): each status write
		// of a Kustomization comes back as a watch event to both
		// controllers that write it. Their REST client shares the
		// manager's HTTP client and its connections.
		NewCache: func(config *rest.Config, opts cache.Options) (cache.Cache, error) {
			newInformer, err := typedwatch.NewInformerFunc(config, opts.HTTPClient, opts.Scheme, onePassKinds(opts.ByObject, ownKinds))
			if err != nil {
				return nil, err
			}
			opts.NewInformer = newInformer
			return cache.New(config, opts)
		},
		// controller-runtime's lazy mapper, its answers kept (restmapper.go):
		// every status write and object apply asks it for a mapping.
		MapperProvider:                NewRESTMapper,
		Metrics:                       metricsserver.Options{BindAddress: metricsAddr},
		HealthProbeBindAddress:        healthAddr,
		PprofBindAddress:              opts.PprofAddr,
		LeaderElection:                opts.LeaderElection.Enable,
		LeaderElectionID:              leaseID,
		LeaderElectionNamespace:       leNamespace,
		LeaderElectionReleaseOnCancel: opts.LeaderElection.ReleaseOnCancel,
		LeaseDuration:                 &opts.LeaderElection.LeaseDuration,
		RenewDeadline:                 &opts.LeaderElection.RenewDeadline,
		RetryPeriod:                   &opts.LeaderElection.RetryPeriod,
		Controller: config.Controller{
			// controller-runtime's default too, stated so that no
			// controller can lose it: reconcilers read untrusted input.
			RecoverPanic: &recoverPanic,
			// How long a controller waits for its first lists before the
			// process gives up (--cache-sync-timeout).
			CacheSyncTimeout: opts.CacheSyncTimeout,
		},
		Cache: cache.Options{
			ByObject: byObject,
			// No controller reads the managedFields of what it caches (its
			// own kinds, their sources, Namespaces…): each field manager's
			// field set is kept as raw JSON that, for a Kustomization,
			// lists every inventory entry and condition again — a few KiB
			// of every cached object, 3–4 MB of render-controller's 21 MB
			// of live heap after a fleet of 1,000 (docs/bench/fleet.md,
			// "Memory at 5,000"). Writes are
			// server-side applies or updates, which keep the stored
			// managedFields when the request carries none. sync-controller's
			// watches of managed objects, whose managedFields tell foreign
			// writes apart, have caches of their own (internal/engine).
			DefaultTransform: cache.TransformStripManagedFields(),
		},
		Client: ctrlclient.Options{
			Cache: &ctrlclient.CacheOptions{
				// Secrets and ConfigMaps are read rarely and only by name;
				// caching every one in the cluster would cost memory for nothing.
				DisableFor: []ctrlclient.Object{&corev1.Secret{}, &corev1.ConfigMap{}},
			},
		},
	})
	if err != nil {
		if opts.LeaderElection.Enable && leNamespace == "" {
			return nil, fmt.Errorf("creating the %s manager: %w (leader election is on: set %s to the namespace of its Lease, or pass --%s=false to run a single process outside a cluster)",
				name, err, RuntimeNamespaceEnv, options.LeaderElectionFlag)
		}
		return nil, fmt.Errorf("creating the %s manager: %w", name, err)
	}
	if inherited(opts.MetricsAddr) {
		if err := addMetricsServer(mgr, opts.MetricsAddr); err != nil {
			return nil, err
		}
	}
	if inherited(opts.HealthAddr) {
		if mgr, err = withInheritedProbes(mgr, opts.HealthAddr); err != nil {
			return nil, err
		}
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, err
	}
	if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
		return nil, err
	}
	return mgr, nil
}

// AddArtifactServer adds srv to the manager, which runs it on the leader
// only, and makes /readyz answer ready only while srv serves: a replica
// that is not the leader (or whose server has stopped) is not ready, so a
// Service sends artifact downloads to the leader alone.
func AddArtifactServer(mgr ctrl.Manager, srv *artifact.Server) error {
	if err := mgr.Add(srv); err != nil {
		return err
	}
	return mgr.AddReadyzCheck("artifact-server", srv.Ready)
}

// withTrims adds each trim's Transform to byObject, in the entry of its
// kind when an own kind has one (same Go type), after the managedFields
// are stripped: a kind's Transform replaces the cache's DefaultTransform.
func withTrims(byObject map[ctrlclient.Object]cache.ByObject, trims []Trim) (map[ctrlclient.Object]cache.ByObject, error) {
	for _, t := range trims {
		if t.Object == nil || t.Transform == nil {
			return nil, fmt.Errorf("a cache trim needs an object and a transform")
		}
		if byObject == nil {
			byObject = map[ctrlclient.Object]cache.ByObject{}
		}
		key := ctrlclient.Object(t.Object)
		for k := range byObject {
			if reflect.TypeOf(k) == reflect.TypeOf(t.Object) {
				key = k
			}
		}
		by := byObject[key]
		if by.Transform != nil {
			return nil, fmt.Errorf("two cache trims for %T", t.Object)
		}
		by.Transform = stripThen(t.Transform)
		byObject[key] = by
	}
	return byObject, nil
}

// stripThen strips an object's managedFields, then runs transform.
func stripThen(transform toolscache.TransformFunc) toolscache.TransformFunc {
	strip := cache.TransformStripManagedFields()
	return func(in any) (any, error) {
		out, err := strip(in)
		if err != nil {
			return nil, err
		}
		return transform(out)
	}
}

// onePassKinds returns the own kinds that are Plumb's (pkg/kinds), each
// with what byObject keeps of it, for their lists and watches decoded in
// one pass: the label and field selectors, and the namespace when the
// cache keeps one. A kind kept in several namespaces would need an informer
// per namespace that NewInformer cannot tell apart: it keeps
// controller-runtime's watch.
func onePassKinds(byObject map[ctrlclient.Object]cache.ByObject, ownKinds []ctrlclient.Object) []typedwatch.Kind {
	var out []typedwatch.Kind
	for _, obj := range ownKinds {
		k, ok := kinds.Of(obj)
		if !ok {
			continue
		}
		var by cache.ByObject
		for o, b := range byObject {
			if reflect.TypeOf(o) == reflect.TypeOf(obj) {
				by = b
			}
		}
		sel := typedwatch.Selection{Label: by.Label, Field: by.Field}
		if len(by.Namespaces) > 1 {
			continue
		}
		for ns, c := range by.Namespaces {
			if c.LabelSelector != nil || c.FieldSelector != nil {
				sel.Label, sel.Field = c.LabelSelector, c.FieldSelector
			}
			sel.Namespace = ns
		}
		out = append(out, typedwatch.Kind{GVK: k.GVK, Resource: k.Resource, Selection: sel})
	}
	return out
}

// ownKindsCache returns the cache options that keep only the objects of
// ownKinds matching --watch-label-selector and, with
// --watch-all-namespaces=false, in runtimeNS; nil with neither.
func ownKindsCache(opts options.Manager, ownKinds []ctrlclient.Object, runtimeNS string) (map[ctrlclient.Object]cache.ByObject, error) {
	if opts.WatchLabelSelector == "" && !opts.OnlyRuntimeNamespace {
		return nil, nil
	}
	if len(ownKinds) == 0 {
		flag := options.WatchLabelSelectorFlag
		if opts.WatchLabelSelector == "" {
			flag = options.WatchAllNamespacesFlag + "=false"
		}
		return nil, fmt.Errorf("--%s is given but the controller names no kinds of its own to apply it to", flag)
	}
	var by cache.ByObject
	if opts.WatchLabelSelector != "" {
		sel, err := opts.WatchSelector()
		if err != nil {
			return nil, err
		}
		by.Label = sel
	}
	if opts.OnlyRuntimeNamespace {
		if runtimeNS == "" {
			return nil, fmt.Errorf("--%s=false watches $%s, which is not set", options.WatchAllNamespacesFlag, RuntimeNamespaceEnv)
		}
		by.Namespaces = map[string]cache.Config{runtimeNS: {}}
	}
	byObject := make(map[ctrlclient.Object]cache.ByObject, len(ownKinds))
	for _, kind := range ownKinds {
		byObject[kind] = by
	}
	return byObject, nil
}
