// Command render-controller renders Kustomization and HelmRelease objects
// into manifests artifacts: it downloads and verifies the source or chart
// artifact, runs kustomize and variable substitution or Helm's template
// engine, and serves the result over HTTP.
package main

import (
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/discovery"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/app"
	"plumb.dev/pkg/artifact"
	"plumb.dev/pkg/events"
	"plumb.dev/pkg/helmrender"
	"plumb.dev/pkg/options"
	"plumb.dev/pkg/render"
	"plumb.dev/pkg/renderfeed"
	"plumb.dev/pkg/renderworker"
	rendercontroller "plumb.dev/render-controller/internal/controller"
	"plumb.dev/render-controller/internal/sourcetree"
)

const controllerName = rendercontroller.ControllerName

// renderOptions are the flags of render-controller alone.
type renderOptions struct {
	StrictSubstitution bool
	MaxArtifactSize    int64
	MaxExtractedSize   int64
	MaxFiles           int
	MaxValuesSize      int64
	MaxChartSize       int64
	MaxChartExtracted  int64
	MaxChartFiles      int64
	CapabilitiesTTL    time.Duration
	DownloadAttempts   int
	RenderTimeout      time.Duration
	RenderLimits       render.Limits
	SourceCacheSize    int64
	RenderWorkers      int
	RenderWorkerMemory int64
	PluginDir          string
}

// Chart limits: a large real chart (kube-prometheus-stack, dependencies
// and dashboards included) is under 1 MiB packaged and about 10 MiB of
// files. These defaults keep a HelmRelease render within the memory one
// Kustomization render may take (deploy/README.md, "Sizing"), below
// pkg/helmrender's own defaults, which are the SDK's ceilings.
const (
	defaultMaxChartSize      int64 = 16 << 20
	defaultMaxChartExtracted int64 = 64 << 20
)

func (o *renderOptions) BindFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.StrictSubstitution, "strict-substitution", false,
		"Fail a render when a ${var} has no value and no default, instead of substituting the empty string (Flux's default).")
	fs.Int64Var(&o.MaxArtifactSize, "max-artifact-size", artifact.DefaultMaxArchiveBytes,
		"The largest source artifact (compressed) downloaded, in bytes.")
	fs.Int64Var(&o.MaxExtractedSize, "max-extracted-size", artifact.DefaultMaxExtractedBytes,
		"The most bytes a source artifact may extract to.")
	fs.IntVar(&o.MaxFiles, "max-files", artifact.DefaultMaxFiles,
		"The most entries a source artifact may hold.")
	fs.Int64Var(&o.MaxValuesSize, "max-values-size", helmrender.DefaultMaxValuesBytes,
		"The most bytes of values one HelmRelease may read (its valuesFrom keys and spec.values together) and render (the merged values as JSON).")
	fs.Int64Var(&o.MaxChartSize, "max-chart-size", defaultMaxChartSize,
		"The largest chart artifact (.tgz) a HelmRelease downloads and renders, in bytes.")
	fs.Int64Var(&o.MaxChartExtracted, "max-chart-extracted-size", defaultMaxChartExtracted,
		"The most bytes a chart artifact's files may decompress to (their names and tar headers counted).")
	fs.Int64Var(&o.MaxChartFiles, "max-chart-files", helmrender.DefaultMaxFiles,
		"The most entries (files and folders) a chart artifact may hold.")
	fs.DurationVar(&o.CapabilitiesTTL, "capabilities-ttl", rendercontroller.DefaultCapabilitiesTTL,
		"How long the cluster's capabilities (Kubernetes version, served API versions) are used for Helm renders before discovery is asked again; a CustomResourceDefinition change drops them at once.")
	fs.IntVar(&o.DownloadAttempts, "download-attempts", 4,
		"How many times a failed download of a source artifact is tried, with exponential backoff.")
	fs.DurationVar(&o.RenderTimeout, "render-timeout", rendercontroller.DefaultRenderTimeout,
		"The longest one render may take; a render that takes longer fails with LimitExceeded and frees its worker.")
	fs.Int64Var(&o.RenderLimits.MaxInputBytes, "max-render-input", render.DefaultMaxInputBytes,
		"The most bytes one render may read from the source tree (each file counted each time it is read).")
	fs.Int64Var(&o.RenderLimits.MaxNodes, "max-yaml-nodes", render.DefaultMaxNodes,
		"The most YAML nodes one render may read, counted with aliases expanded: the bound on a render's memory.")
	fs.Int64Var(&o.RenderLimits.MaxDocuments, "max-yaml-documents", render.DefaultMaxDocuments,
		"The most YAML documents one render may read.")
	fs.Int64Var(&o.RenderLimits.MaxOutputBytes, "max-rendered-size", render.DefaultMaxOutputBytes,
		"The largest rendered manifests artifact, in bytes.")
	fs.IntVar(&o.RenderWorkers, "render-workers", renderworker.DefaultWorkers,
		"How many renders run at once, each in a worker process of its own with hard limits; the others wait for a free worker.")
	fs.Int64Var(&o.RenderWorkerMemory, "render-worker-memory", renderworker.DefaultMemory,
		"The memory one render worker may use, in bytes (its address space beyond what it maps once started); a render past it fails with LimitExceeded.")
	fs.StringVar(&o.PluginDir, "plugin-dir", "",
		"The folder of the config-management plugins' sockets, <name>.sock (docs/design/plugins.md); empty: no plugins.")
	fs.Int64Var(&o.SourceCacheSize, "source-cache-size", sourcetree.DefaultMaxBytes,
		"The extracted bytes of the source trees kept for Kustomizations to share (one per revision); trees in use are kept beyond it.")
}

func (o *renderOptions) Validate() error {
	switch {
	case o.MaxArtifactSize < 1:
		return fmt.Errorf("--max-artifact-size must be positive, got %d", o.MaxArtifactSize)
	case o.MaxExtractedSize < 1:
		return fmt.Errorf("--max-extracted-size must be positive, got %d", o.MaxExtractedSize)
	case o.MaxFiles < 1:
		return fmt.Errorf("--max-files must be positive, got %d", o.MaxFiles)
	case o.SourceCacheSize < 1:
		return fmt.Errorf("--source-cache-size must be positive, got %d", o.SourceCacheSize)
	case o.MaxValuesSize < 1:
		return fmt.Errorf("--max-values-size must be positive, got %d", o.MaxValuesSize)
	case o.MaxChartSize < 1, o.MaxChartExtracted < 1, o.MaxChartFiles < 1:
		return fmt.Errorf("--max-chart-size, --max-chart-extracted-size and --max-chart-files must be positive")
	case o.MaxChartExtracted > helmrender.DefaultMaxDecompressedBytes:
		return fmt.Errorf("--max-chart-extracted-size cannot pass the Helm SDK loader's own limit of %d bytes", helmrender.DefaultMaxDecompressedBytes)
	case o.CapabilitiesTTL <= 0:
		return fmt.Errorf("--capabilities-ttl must be positive, got %s", o.CapabilitiesTTL)
	case o.DownloadAttempts < 1:
		return fmt.Errorf("--download-attempts must be at least 1, got %d", o.DownloadAttempts)
	case o.RenderWorkers < 1:
		return fmt.Errorf("--render-workers must be at least 1, got %d", o.RenderWorkers)
	case o.RenderWorkerMemory < 64<<20:
		return fmt.Errorf("--render-worker-memory must be at least 64 MiB, got %d bytes", o.RenderWorkerMemory)
	case o.RenderTimeout <= 0:
		return fmt.Errorf("--render-timeout must be positive, got %s", o.RenderTimeout)
	case o.RenderLimits.MaxInputBytes < 1, o.RenderLimits.MaxNodes < 1, o.RenderLimits.MaxDocuments < 1, o.RenderLimits.MaxOutputBytes < 1:
		return fmt.Errorf("--max-render-input, --max-yaml-nodes, --max-yaml-documents and --max-rendered-size must be positive")
	}
	return nil
}

func main() {
	// A render worker is this program started again: it serves renders and
	// never comes back from here (pkg/renderworker).
	renderworker.ServeIfWorker()
	var (
		mgrOpts     options.Manager
		natsOpts    options.NATS
		storageOpts options.Storage
		renderOpts  renderOptions
		refOpts     options.Reconcile
	)
	mgrOpts.BindFlags(pflag.CommandLine)
	natsOpts.BindFlags(pflag.CommandLine)
	storageOpts.BindFlags(pflag.CommandLine)
	renderOpts.BindFlags(pflag.CommandLine)
	refOpts.BindFlags(pflag.CommandLine)
	pflag.Parse()

	if err := run(mgrOpts, natsOpts, storageOpts, renderOpts, refOpts); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", controllerName, err)
		os.Exit(1)
	}
}

func run(mgrOpts options.Manager, natsOpts options.NATS, storageOpts options.Storage, renderOpts renderOptions, refOpts options.Reconcile) error {
	// Rendering reads hostile input: no request may leave this process
	// through the default transport (see pkg/render's sandbox).
	render.LockDownProcess()
	app.SetupLogger(mgrOpts)
	log := ctrl.Log.WithName(controllerName)
	if err := storageOpts.Validate(); err != nil {
		return err
	}
	if err := refOpts.Validate(); err != nil {
		return err
	}
	if err := renderOpts.Validate(); err != nil {
		return err
	}
	advAddr := storageOpts.AdvertiseAddr
	if advAddr == "" {
		advAddr = storageOpts.Addr
	}
	storage, err := artifact.NewStorage(storageOpts.Path, advAddr, storageOpts.RetentionRecords)
	if err != nil {
		return err
	}
	// Every render is made again from its source artifact and spec, and
	// verified by whoever reads it: no fsync per render.
	storage.Rebuilt = true

	scheme := app.NewScheme()
	cfg := app.RESTConfig(mgrOpts)
	// A proxy function gives client-go a transport of its own even for a
	// plain-HTTP API server, where it would otherwise take the default
	// transport that LockDownProcess disabled.
	if cfg.Proxy == nil {
		cfg.Proxy = http.ProxyFromEnvironment
	}
	// --watch-label-selector picks the Kustomizations and HelmReleases of
	// this shard; the sources, HelmCharts, ConfigMaps and CRDs they read
	// stay whole: a source may be in another shard (docs/design/sharding.md).
	// The cache keeps of a Kustomization what the render reads
	// (rendercontroller.TrimKustomization).
	mgr, err := app.NewTrimmingManager(controllerName, cfg, scheme, mgrOpts, rendercontroller.CacheTrims(), &kustomizev1.Kustomization{}, &helmv2.HelmRelease{})
	if err != nil {
		return err
	}
	// The artifact server runs on the leader, the replica writing storage,
	// and /readyz is ready only while it serves.
	// It serves the render feed too (pkg/renderfeed): while a
	// sync-controller reads it, a good render goes to status with the
	// outcome of its sync, in sync-controller's one write.
	feed := &renderfeed.Feed{}
	serverOpts := append(storageOpts.ServerOptions(), artifact.WithHandler(renderfeed.Path, feed))
	if err := app.AddArtifactServer(mgr, artifact.NewServer(storageOpts.Addr, storage, serverOpts...)); err != nil {
		return err
	}

	// Events go to the API server and, with --nats-url, to the stream;
	// what is still queued is sent once the manager has stopped.
	recorder, closeEvents, err := events.NewManagerRecorder(mgr, natsOpts, controllerName, log)
	if err != nil {
		return err
	}
	defer closeEvents()

	limits := artifact.Limits{
		MaxArchiveBytes:   renderOpts.MaxArtifactSize,
		MaxExtractedBytes: renderOpts.MaxExtractedSize,
		MaxFiles:          renderOpts.MaxFiles,
	}
	sources, err := sourcetree.New(sourcetree.Options{MaxBytes: renderOpts.SourceCacheSize, Limits: limits})
	if err != nil {
		return fmt.Errorf("creating the source cache: %w", err)
	}
	defer sources.Close()
	renderer := renderworker.NewPool(renderworker.Options{
		Workers: renderOpts.RenderWorkers,
		Memory:  renderOpts.RenderWorkerMemory,
		Log:     log.WithName("render-worker"),
	})
	defer renderer.Close()
	r := &rendercontroller.KustomizationReconciler{
		Client:               mgr.GetClient(),
		SourceTrees:          sources,
		Storage:              storage,
		Events:               recorder,
		Metrics:              rendercontroller.NewMetrics(ctrlmetrics.Registry),
		NoCrossNamespaceRefs: refOpts.NoCrossNamespaceRefs,
		StrictSubstitution:   renderOpts.StrictSubstitution,
		DependencyRequeue:    refOpts.RequeueDependency,
		DownloadAttempts:     renderOpts.DownloadAttempts,
		RenderTimeout:        renderOpts.RenderTimeout,
		RenderLimits:         renderOpts.RenderLimits,
		Limits:               limits,
		Renderer:             renderer,
		PluginDir:            renderOpts.PluginDir,
		Feed:                 feed,
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return fmt.Errorf("creating the discovery client: %w", err)
	}
	hr := &rendercontroller.HelmReleaseReconciler{
		Client:               mgr.GetClient(),
		Storage:              storage,
		Events:               recorder,
		Metrics:              rendercontroller.NewHelmReleaseMetrics(ctrlmetrics.Registry),
		Capabilities:         &rendercontroller.Capabilities{Discovery: disc, TTL: renderOpts.CapabilitiesTTL},
		NoCrossNamespaceRefs: refOpts.NoCrossNamespaceRefs,
		DependencyRequeue:    refOpts.RequeueDependency,
		DownloadAttempts:     renderOpts.DownloadAttempts,
		RenderTimeout:        renderOpts.RenderTimeout,
		RenderLimits:         renderOpts.RenderLimits,
		Renderer:             renderer,
		HelmLimits: helmrender.Limits{
			MaxArchiveBytes:      renderOpts.MaxChartSize,
			MaxDecompressedBytes: renderOpts.MaxChartExtracted,
			MaxFiles:             renderOpts.MaxChartFiles,
			MaxValuesBytes:       renderOpts.MaxValuesSize,
		},
	}
	ctx := ctrl.SetupSignalHandler()
	if err := r.SetupWithManager(ctx, mgr, controller.Options{MaxConcurrentReconciles: mgrOpts.Concurrent}); err != nil {
		return err
	}
	if err := hr.SetupWithManager(ctx, mgr, controller.Options{MaxConcurrentReconciles: mgrOpts.Concurrent}); err != nil {
		return err
	}
	log.Info("starting", "storage", storage.BasePath, "storageAddr", storageOpts.Addr, "advertised", storage.Hostname)
	return mgr.Start(ctx)
}
