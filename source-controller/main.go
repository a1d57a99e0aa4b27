// Command source-controller reconciles GitRepository, HelmRepository,
// HelmChart, OCIRepository and Bucket objects into artifacts (a tar.gz of
// a commit, a verified index.yaml, a packaged chart, an OCI artifact's
// layer, a bucket's objects) and serves them over HTTP to the other
// Plumb controllers.
package main

import (
	"fmt"
	"net/netip"
	"os"

	"github.com/spf13/pflag"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	sourcev1 "plumb.dev/api/source/v1"
	sourceextv1beta1 "plumb.dev/api/sourceext/v1beta1"
	"plumb.dev/pkg/app"
	"plumb.dev/pkg/artifact"
	"plumb.dev/pkg/events"
	"plumb.dev/pkg/helmpackage"
	"plumb.dev/pkg/netguard"
	"plumb.dev/pkg/options"
	"plumb.dev/pkg/renderworker"
	"plumb.dev/source-controller/internal/bucket"
	sourcecontroller "plumb.dev/source-controller/internal/controller"
	"plumb.dev/source-controller/internal/egress"
	"plumb.dev/source-controller/internal/git"
)

const controllerName = sourcecontroller.ControllerName

// sourceOptions are the flags of source-controller alone.
type sourceOptions struct {
	MaxRepositorySize    int64
	MaxHelmIndexSize     int64
	MaxHelmChartSize     int64
	MaxHelmExtractedSize int64
	MaxOCILayerSize      int64
	MaxOCIExtractedSize  int64
	MaxBucketObjects     int
	MaxBucketObjectSize  int64
	MaxBucketSize        int64
	ChartWorkers         int
	ChartWorkerMemory    int64
	// AllowedNetworks are the networks of --allowed-private-networks;
	// allowed is their parse (Validate).
	AllowedNetworks []string
	allowed         []netip.Prefix
}

func (o *sourceOptions) BindFlags(fs *pflag.FlagSet) {
	fs.Int64Var(&o.MaxRepositorySize, "max-repository-size", git.DefaultMaxSize,
		"The most bytes one fetch may write to disk, Git objects and checked-out files together; a larger repository is refused (Ready=False, RepositoryTooLarge).")
	fs.Int64Var(&o.MaxHelmIndexSize, "helm-index-max-size", sourcecontroller.DefaultMaxIndexSize,
		"The most bytes of a Helm repository's index.yaml; a larger one is refused (Ready=False, IndexationFailed).")
	fs.Int64Var(&o.MaxHelmChartSize, "helm-chart-max-size", sourcecontroller.DefaultMaxChartSize,
		"The most bytes of one downloaded Helm chart archive (a HelmChart's or one of its dependencies); a larger one is refused (Ready=False, ChartPullFailed).")
	fs.Int64Var(&o.MaxHelmExtractedSize, "helm-chart-max-extracted-size", helmpackage.DefaultMaxExtractedSize,
		"The most bytes of the decompressed files of one Helm chart, as the Helm SDK's loader counts them (and of the dependencies a HelmChart adds, together); a larger chart is refused.")
	fs.IntVar(&o.ChartWorkers, "chart-workers", sourcecontroller.DefaultChartWorkers,
		"How many HelmCharts are loaded and packaged at once, each in a chart worker process of its own with hard limits; the others wait for a free worker.")
	fs.Int64Var(&o.ChartWorkerMemory, "chart-worker-memory", sourcecontroller.DefaultChartWorkerMemory,
		"The memory one chart worker may use, in bytes (its address space beyond what it maps once started); a chart past it fails with LimitExceeded.")
	fs.Int64Var(&o.MaxOCILayerSize, "oci-max-layer-size", sourcecontroller.DefaultMaxOCILayerSize,
		"The most bytes of the compressed layer an OCIRepository pulls; a larger one is refused (Ready=False, OCIArtifactLayerOperationFailed).")
	fs.Int64Var(&o.MaxOCIExtractedSize, "oci-max-extracted-size", sourcecontroller.DefaultMaxOCIExtractedSize,
		"The most bytes of the files of an OCIRepository's extracted layer; a larger one is refused (Ready=False, OCIArtifactLayerOperationFailed).")
	fs.IntVar(&o.MaxBucketObjects, "bucket-max-objects", sourcecontroller.DefaultMaxBucketObjects,
		"The most objects a Bucket fetches, after spec.prefix and the ignore rules; a bucket with more is refused (Ready=False, LimitExceeded).")
	fs.Int64Var(&o.MaxBucketObjectSize, "bucket-max-object-size", sourcecontroller.DefaultMaxBucketObjectSize,
		"The most bytes of one object a Bucket fetches; a larger one is refused (Ready=False, LimitExceeded).")
	fs.Int64Var(&o.MaxBucketSize, "bucket-max-size", sourcecontroller.DefaultMaxBucketSize,
		"The most bytes of the objects a Bucket fetches, together; more are refused (Ready=False, LimitExceeded).")
	fs.StringSliceVar(&o.AllowedNetworks, egress.AllowedNetworksFlag, nil,
		"Networks (CIDRs or addresses, comma-separated) of loopback and private addresses that Git servers, chart repositories and registries may be on; every other loopback and private address is refused, and link-local and cloud metadata addresses always are.")
}

func (o *sourceOptions) Validate() error {
	if o.MaxRepositorySize < 1 {
		return fmt.Errorf("--max-repository-size must be positive, got %d", o.MaxRepositorySize)
	}
	for name, v := range map[string]int64{
		"--helm-index-max-size":           o.MaxHelmIndexSize,
		"--helm-chart-max-size":           o.MaxHelmChartSize,
		"--helm-chart-max-extracted-size": o.MaxHelmExtractedSize,
		"--oci-max-layer-size":            o.MaxOCILayerSize,
		"--oci-max-extracted-size":        o.MaxOCIExtractedSize,
		"--bucket-max-objects":            int64(o.MaxBucketObjects),
		"--bucket-max-object-size":        o.MaxBucketObjectSize,
		"--bucket-max-size":               o.MaxBucketSize,
	} {
		if v < 1 {
			return fmt.Errorf("%s must be positive, got %d", name, v)
		}
	}
	if o.ChartWorkers < 1 {
		return fmt.Errorf("--chart-workers must be at least 1, got %d", o.ChartWorkers)
	}
	if o.ChartWorkerMemory < 64<<20 {
		return fmt.Errorf("--chart-worker-memory must be at least 64 MiB, got %d bytes", o.ChartWorkerMemory)
	}
	allowed, err := netguard.ParseNetworks(o.AllowedNetworks)
	if err != nil {
		return fmt.Errorf("--%s: %w", egress.AllowedNetworksFlag, err)
	}
	o.allowed = allowed
	return nil
}

func main() {
	// A chart worker is this program started again: it loads and packages
	// charts and never comes back from here (pkg/renderworker).
	renderworker.ServeIfWorker()
	var (
		mgrOpts     options.Manager
		natsOpts    options.NATS
		storageOpts options.Storage
		sourceOpts  sourceOptions
		refOpts     options.Reconcile
	)
	mgrOpts.BindFlags(pflag.CommandLine)
	natsOpts.BindFlags(pflag.CommandLine)
	storageOpts.BindFlags(pflag.CommandLine)
	sourceOpts.BindFlags(pflag.CommandLine)
	refOpts.BindFlags(pflag.CommandLine)
	pflag.Parse()

	if err := run(mgrOpts, natsOpts, storageOpts, &sourceOpts, refOpts); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", controllerName, err)
		os.Exit(1)
	}
}

func run(mgrOpts options.Manager, natsOpts options.NATS, storageOpts options.Storage, sourceOpts *sourceOptions, refOpts options.Reconcile) error {
	app.SetupLogger(mgrOpts)
	log := ctrl.Log.WithName(controllerName)
	if err := storageOpts.Validate(); err != nil {
		return err
	}
	if err := refOpts.Validate(); err != nil {
		return err
	}
	if err := sourceOpts.Validate(); err != nil {
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

	scheme := app.NewScheme()
	// --watch-label-selector picks the sources of this shard; a source's
	// includes and a HelmChart's source are read in the same filtered cache,
	// so they belong to the same shard (docs/design/sharding.md).
	mgr, err := app.NewManager(controllerName, app.RESTConfig(mgrOpts), scheme, mgrOpts,
		&sourcev1.GitRepository{}, &sourcev1.HelmRepository{}, &sourcev1.HelmChart{}, &sourcev1.OCIRepository{}, &sourcev1.Bucket{}, &sourceextv1beta1.ArtifactGenerator{})
	if err != nil {
		return err
	}
	// The artifact server runs on the leader, the replica writing storage,
	// and /readyz is ready only while it serves.
	if err := app.AddArtifactServer(mgr, artifact.NewServer(storageOpts.Addr, storage, storageOpts.ServerOptions()...)); err != nil {
		return err
	}

	// Events go to the API server and, with --nats-url, to the stream;
	// what is still queued is sent once the manager has stopped.
	recorder, closeEvents, err := events.NewManagerRecorder(mgr, natsOpts, controllerName, log)
	if err != nil {
		return err
	}
	defer closeEvents()
	addresses := egress.Policy(sourceOpts.allowed)

	r := &sourcecontroller.GitRepositoryReconciler{
		Client:            mgr.GetClient(),
		Storage:           storage,
		Events:            recorder,
		Metrics:           sourcecontroller.NewMetrics(ctrlmetrics.Registry),
		MaxRepositorySize: sourceOpts.MaxRepositorySize,
		Addresses:         addresses,
	}
	if err := r.SetupWithManager(mgr, controller.Options{MaxConcurrentReconciles: mgrOpts.Concurrent}); err != nil {
		return err
	}
	repos := &sourcecontroller.HelmRepositoryReconciler{
		Client:       mgr.GetClient(),
		Storage:      storage,
		Events:       recorder,
		Metrics:      sourcecontroller.NewHelmRepositoryMetrics(ctrlmetrics.Registry),
		MaxIndexSize: sourceOpts.MaxHelmIndexSize,
		Addresses:    addresses,
	}
	if err := repos.SetupWithManager(mgr, controller.Options{MaxConcurrentReconciles: mgrOpts.Concurrent}); err != nil {
		return err
	}
	ociRepos := &sourcecontroller.OCIRepositoryReconciler{
		Client:           mgr.GetClient(),
		Storage:          storage,
		Events:           recorder,
		Metrics:          sourcecontroller.NewOCIRepositoryMetrics(ctrlmetrics.Registry),
		MaxLayerSize:     sourceOpts.MaxOCILayerSize,
		MaxExtractedSize: sourceOpts.MaxOCIExtractedSize,
		Addresses:        addresses,
	}
	if err := ociRepos.SetupWithManager(mgr, controller.Options{MaxConcurrentReconciles: mgrOpts.Concurrent}); err != nil {
		return err
	}
	buckets := &sourcecontroller.BucketReconciler{
		Client:  mgr.GetClient(),
		Storage: storage,
		Events:  recorder,
		Metrics: sourcecontroller.NewBucketMetrics(ctrlmetrics.Registry),
		Limits: bucket.Limits{
			MaxObjects: sourceOpts.MaxBucketObjects, MaxObjectSize: sourceOpts.MaxBucketObjectSize, MaxTotalSize: sourceOpts.MaxBucketSize,
		},
		Addresses: addresses,
	}
	if err := buckets.SetupWithManager(mgr, controller.Options{MaxConcurrentReconciles: mgrOpts.Concurrent}); err != nil {
		return err
	}
	ctx := ctrl.SetupSignalHandler()
	packager := sourcecontroller.NewChartWorkers(sourceOpts.ChartWorkers, sourceOpts.ChartWorkerMemory,
		sourceOpts.MaxHelmExtractedSize, log.WithName("chart-worker"))
	defer packager.Close()
	charts := &sourcecontroller.HelmChartReconciler{
		Client:           mgr.GetClient(),
		Storage:          storage,
		Events:           recorder,
		Metrics:          sourcecontroller.NewHelmChartMetrics(ctrlmetrics.Registry),
		MaxChartSize:     sourceOpts.MaxHelmChartSize,
		MaxExtractedSize: sourceOpts.MaxHelmExtractedSize,
		Addresses:        addresses,
		Packager:         packager,
	}
	if err := charts.SetupWithManager(ctx, mgr, controller.Options{MaxConcurrentReconciles: mgrOpts.Concurrent}); err != nil {
		return err
	}
	generators := &sourcecontroller.ArtifactGeneratorReconciler{
		Client:  mgr.GetClient(),
		Storage: storage,
		Events:  recorder,
		Metrics: sourcecontroller.NewArtifactGeneratorMetrics(ctrlmetrics.Registry),
		// A generated artifact is bounded as render-controller bounds the
		// artifacts it extracts: pkg/artifact's defaults.
		NoCrossNamespaceRefs: refOpts.NoCrossNamespaceRefs,
		RequeueDependency:    refOpts.RequeueDependency,
	}
	if err := generators.SetupWithManager(ctx, mgr, controller.Options{MaxConcurrentReconciles: mgrOpts.Concurrent}); err != nil {
		return err
	}
	log.Info("starting", "storage", storage.BasePath, "storageAddr", storageOpts.Addr, "advertised", storage.Hostname,
		"allowedPrivateNetworks", sourceOpts.AllowedNetworks)
	return mgr.Start(ctx)
}
