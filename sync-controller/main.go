// Command sync-controller makes the cluster equal to each Kustomization's
// and HelmRelease's rendered manifests: it diffs with server-side dry-run, applies what changed
// with server-side apply in waves and hooks, prunes, waits for health, and
// corrects drift as soon as a foreign change lands.
package main

import (
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/spf13/pflag"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	setv1 "plumb.dev/api/set/v1"
	"plumb.dev/pkg/app"
	"plumb.dev/pkg/artifact"
	"plumb.dev/pkg/events"
	"plumb.dev/pkg/fetch"
	"plumb.dev/pkg/netguard"
	"plumb.dev/pkg/options"
	"plumb.dev/pkg/renderfeed"
	"plumb.dev/sync-controller/internal/controller"
	"plumb.dev/sync-controller/internal/engine"
	"plumb.dev/sync-controller/internal/fight"
	"plumb.dev/sync-controller/internal/objectset"
	"plumb.dev/sync-controller/internal/pullrequest"
	"plumb.dev/sync-controller/internal/target"
)

// syncOptions are the flags of sync-controller alone.
type syncOptions struct {
	ApplyConcurrency      int
	DriftDebounce         time.Duration
	MaxArtifactSize       int64
	DefaultServiceAccount string
	// AllowLoopbackKubeConfigServers: see controller.Syncer.
	AllowLoopbackKubeConfigServers bool
	// RemoteClusterProxyFromEnvironment: see controller.Syncer.
	RemoteClusterProxyFromEnvironment bool
	PruneGuard                        controller.PruneGuard
	Fight                             fight.Options
	// AllowedNetworks are the loopback and private networks the pull
	// request APIs of ObjectSets may be on.
	AllowedNetworks []string
	// RenderFeedURL is render-controller's render feed
	// (http://<its advertised address>/renders); empty reads none.
	RenderFeedURL string
}

func (o *syncOptions) bindFlags(fs *pflag.FlagSet) {
	fs.IntVar(&o.ApplyConcurrency, "apply-concurrency", 16,
		"How many objects of one Kustomization are applied or checked at the same time.")
	fs.DurationVar(&o.DriftDebounce, "drift-debounce", 100*time.Millisecond,
		"How long a foreign write waits before its drift check, so a burst of writes is checked once.")
	fs.Int64Var(&o.MaxArtifactSize, "max-artifact-size", artifact.DefaultMaxRenderedBytes,
		"The largest rendered artifact downloaded, in bytes.")
	fs.StringVar(&o.DefaultServiceAccount, "default-service-account", "",
		"The ServiceAccount, in the Kustomization's namespace, that a Kustomization without spec.serviceAccountName acts as; empty: sync-controller's own identity.")
	fs.BoolVar(&o.AllowLoopbackKubeConfigServers, "allow-loopback-kubeconfig-servers", false,
		"Let the spec.kubeConfig of a Kustomization or HelmRelease name an API server on a loopback address (sync-controller's own pod in a cluster; for tests and single-machine setups).")
	fs.BoolVar(&o.RemoteClusterProxyFromEnvironment, "remote-cluster-proxy-from-environment", false,
		"Send the requests to a spec.kubeConfig's API server through the proxy that HTTPS_PROXY and NO_PROXY name; off, they go straight to the server, where the address policy judges them.")
	fs.StringSliceVar(&o.AllowedNetworks, allowedNetworksFlag, nil,
		"Networks (CIDRs or addresses, comma-separated) of loopback and private addresses that the Git host APIs of ObjectSets' pullRequests generators may be on; every other loopback and private address is refused, and link-local and cloud metadata addresses always are.")
	fs.StringVar(&o.RenderFeedURL, "render-feed-url", "",
		"render-controller's feed of renders, http://<its --storage-adv-addr>/renders: each render is written to status with the outcome of the sync that applies it, one status write per render instead of two; empty: render-controller writes every render itself.")
	o.PruneGuard.BindFlags(fs)
	o.Fight.BindFlags(fs)
}

// allowedNetworksFlag is source-controller's flag of the same meaning.
const allowedNetworksFlag = "allowed-private-networks"

func main() {
	var (
		mgrOpts  options.Manager
		natsOpts options.NATS
		syncOpts syncOptions
		refOpts  options.Reconcile
	)
	mgrOpts.Concurrent = controller.DefaultConcurrent
	mgrOpts.BindFlags(pflag.CommandLine)
	natsOpts.BindFlags(pflag.CommandLine)
	syncOpts.bindFlags(pflag.CommandLine)
	refOpts.BindFlags(pflag.CommandLine)
	pflag.Parse()

	if err := run(mgrOpts, natsOpts, syncOpts, refOpts); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", controller.ControllerName, err)
		os.Exit(1)
	}
}

func run(mgrOpts options.Manager, natsOpts options.NATS, syncOpts syncOptions, refOpts options.Reconcile) error {
	if err := refOpts.Validate(); err != nil {
		return err
	}
	allowed, err := netguard.ParseNetworks(syncOpts.AllowedNetworks)
	if err != nil {
		return fmt.Errorf("--%s: %w", allowedNetworksFlag, err)
	}
	app.SetupLogger(mgrOpts)
	log := ctrl.Log.WithName(controller.ControllerName)
	ctx := ctrl.SetupSignalHandler()

	scheme := app.NewScheme()
	cfg := app.RESTConfig(mgrOpts)
	// --watch-label-selector picks the Kustomizations and HelmReleases of
	// this shard; the managed objects' watchers below are not the
	// manager's cache and see every owner's objects: a request for another
	// shard's owner is dropped by Syncer.Shard (docs/design/sharding.md).
	mgr, err := app.NewManager(controller.ControllerName, cfg, scheme, mgrOpts, &kustomizev1.Kustomization{}, &helmv2.HelmRelease{}, &setv1.ObjectSet{})
	if err != nil {
		return err
	}
	// A watcher, and an engine, per kind: each sees only the objects with
	// its kind's ownership labels and wakes only its kind's controller.
	watcher, err := engine.NewWatcher(cfg, scheme, mgr.GetRESTMapper(), syncOpts.DriftDebounce, log.WithName("watcher"))
	if err != nil {
		return err
	}
	if err := mgr.Add(watcher); err != nil {
		return err
	}
	helmWatcher, err := engine.NewWatcherFor(helmv2.HelmReleaseKind, cfg, scheme, mgr.GetRESTMapper(), syncOpts.DriftDebounce, log.WithName("helm-watcher"))
	if err != nil {
		return err
	}
	if err := mgr.Add(helmWatcher); err != nil {
		return err
	}

	// Events go to the API server and, with --nats-url, to the stream;
	// what is still queued is sent once the manager has stopped.
	recorder, closeEvents, err := events.NewManagerRecorder(mgr, natsOpts, controller.ControllerName, log)
	if err != nil {
		return err
	}
	defer closeEvents()

	// The manager's cache holds the shard's Kustomizations only, but the
	// reconcilers read each from the API server: they check the key too.
	shard, err := mgrOpts.WatchSelector()
	if err != nil {
		return err
	}
	metrics := controller.NewMetrics(ctrlmetrics.Registry)
	clients := target.NewClients(cfg, scheme, mgr.GetRESTMapper())
	artifacts := controller.NewArtifactBudget(syncOpts.MaxArtifactSize)
	// With --render-feed-url, one connection to render-controller's feed
	// (on the leader), whose records wake the Kustomizations they render.
	var renders *controller.RenderRecords
	if syncOpts.RenderFeedURL != "" {
		if _, err := renderfeed.Origin(syncOpts.RenderFeedURL); err != nil {
			return fmt.Errorf("--render-feed-url: %w", err)
		}
		renders = controller.NewRenderRecords(log.WithName("render-feed"))
		if err := mgr.Add(&renderfeed.Subscriber{
			URL: syncOpts.RenderFeedURL, Handle: renders.Handle, Reset: renders.Reset, Log: log.WithName("render-feed"),
		}); err != nil {
			return err
		}
	}
	syncer := func(w *engine.Watcher) controller.Syncer {
		return controller.Syncer{
			Engine:                            engine.New(mgr.GetClient(), mgr.GetRESTMapper(), w, syncOpts.ApplyConcurrency),
			Client:                            mgr.GetClient(),
			Reader:                            mgr.GetAPIReader(),
			Shard:                             shard,
			Metrics:                           metrics,
			Events:                            recorder,
			Fetch:                             fetch.Options{Client: &http.Client{Timeout: time.Minute}, MaxSize: syncOpts.MaxArtifactSize},
			Artifacts:                         artifacts,
			DependencyRequeue:                 refOpts.RequeueDependency,
			Clients:                           clients,
			DefaultServiceAccount:             syncOpts.DefaultServiceAccount,
			AllowLoopbackKubeConfigServers:    syncOpts.AllowLoopbackKubeConfigServers,
			RemoteClusterProxyFromEnvironment: syncOpts.RemoteClusterProxyFromEnvironment,
			NoCrossNamespaceRefs:              refOpts.NoCrossNamespaceRefs,
			PruneGuard:                        &syncOpts.PruneGuard,
			Fight:                             syncOpts.Fight,
			LeaderElection:                    mgrOpts.LeaderElection.Enable,
		}
	}
	ks := &controller.KustomizationReconciler{Syncer: syncer(watcher)}
	ks.Renders = renders
	if err := ks.SetupWithManager(ctx, mgr, mgrOpts.Concurrent); err != nil {
		return err
	}
	hr := &controller.HelmReleaseReconciler{Syncer: syncer(helmWatcher)}
	if err := hr.SetupWithManager(ctx, mgr, mgrOpts.Concurrent); err != nil {
		return err
	}
	sets := &objectset.Reconciler{
		Client:                mgr.GetClient(),
		Reader:                mgr.GetAPIReader(),
		Config:                cfg,
		Scheme:                scheme,
		Events:                recorder,
		Metrics:               objectset.NewMetrics(ctrlmetrics.Registry),
		Fetch:                 fetch.Options{Client: &http.Client{Timeout: time.Minute}, MaxSize: syncOpts.MaxArtifactSize},
		DefaultServiceAccount: syncOpts.DefaultServiceAccount,
		NoCrossNamespaceRefs:  refOpts.NoCrossNamespaceRefs,
		Guard:                 syncOpts.PruneGuard.HoldsShare,
		PullRequests: pullrequest.New(netguard.Policy{Allowed: allowed, LoopbackFlag: "--" + allowedNetworksFlag, PrivateFlag: "--" + allowedNetworksFlag},
			pullrequest.DefaultLimits, nil),
	}
	if err := sets.SetupWithManager(mgr, ctrlcontroller.Options{MaxConcurrentReconciles: mgrOpts.Concurrent}); err != nil {
		return err
	}
	log.Info("starting", "applyConcurrency", syncOpts.ApplyConcurrency,
		"defaultServiceAccount", syncOpts.DefaultServiceAccount, "noCrossNamespaceRefs", refOpts.NoCrossNamespaceRefs,
		"maxPrunePercent", syncOpts.PruneGuard.MaxPercent, "pruneGuardMinObjects", syncOpts.PruneGuard.MinObjects,
		"driftFightWindow", syncOpts.Fight.Window, "renderFeedURL", syncOpts.RenderFeedURL)
	return mgr.Start(ctx)
}
