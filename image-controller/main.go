// Command image-controller scans the tags of container images in
// registries (ImageRepository), chooses the latest image of each by a
// policy (ImagePolicy), and writes those images into Git repositories'
// manifests, committing and pushing them (ImageUpdateAutomation).
package main

import (
	"fmt"
	"net/netip"
	"os"

	"github.com/spf13/pflag"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	imagev1 "plumb.dev/api/image/v1"
	imagecontroller "plumb.dev/image-controller/internal/controller"
	"plumb.dev/image-controller/internal/registry"
	"plumb.dev/pkg/app"
	"plumb.dev/pkg/events"

	// go-git's transports are process-wide: this import installs ones that
	// connect only through the address policy each connection carries
	// (Connection.Addresses, --allowed-private-networks), for the
	// ImageUpdateAutomations' clones and pushes.
	_ "plumb.dev/pkg/gitreach"
	"plumb.dev/pkg/netguard"
	"plumb.dev/pkg/options"
)

const controllerName = imagecontroller.ControllerName

// imageOptions are the flags of image-controller alone.
type imageOptions struct {
	MaxTags         int
	MaxTagPages     int
	MaxResponseSize int64
	// AllowedNetworks are the networks of --allowed-private-networks;
	// allowed is their parse (Validate).
	AllowedNetworks []string
	allowed         []netip.Prefix
}

func (o *imageOptions) BindFlags(fs *pflag.FlagSet) {
	fs.IntVar(&o.MaxTags, "max-tags", registry.DefaultMaxTags,
		"The most tags an ImageRepository's registry may list; a longer list fails the scan (Ready=False, TagLimitExceeded).")
	fs.IntVar(&o.MaxTagPages, "max-tag-pages", registry.DefaultMaxPages,
		"The most pages of a tag list read in one scan; more fail it (Ready=False, TagLimitExceeded).")
	fs.Int64Var(&o.MaxResponseSize, "max-response-size", registry.DefaultMaxPageBytes,
		"The most bytes of one registry answer (a page of tags, a token); a larger one fails the scan (Ready=False, ReadOperationFailed).")
	fs.StringSliceVar(&o.AllowedNetworks, imagecontroller.AllowedNetworksFlag, nil,
		"Networks (CIDRs or addresses, comma-separated) of loopback and private addresses that registries and Git servers may be on; every other loopback and private address is refused, and link-local and cloud metadata addresses always are.")
}

func (o *imageOptions) Validate() error {
	for name, v := range map[string]int64{
		"--max-tags": int64(o.MaxTags), "--max-tag-pages": int64(o.MaxTagPages), "--max-response-size": o.MaxResponseSize,
	} {
		if v < 1 {
			return fmt.Errorf("%s must be positive, got %d", name, v)
		}
	}
	allowed, err := netguard.ParseNetworks(o.AllowedNetworks)
	if err != nil {
		return fmt.Errorf("--%s: %w", imagecontroller.AllowedNetworksFlag, err)
	}
	o.allowed = allowed
	return nil
}

func main() {
	var (
		mgrOpts   options.Manager
		natsOpts  options.NATS
		imageOpts imageOptions
		refOpts   options.Reconcile
	)
	mgrOpts.BindFlags(pflag.CommandLine)
	natsOpts.BindFlags(pflag.CommandLine)
	imageOpts.BindFlags(pflag.CommandLine)
	refOpts.BindFlags(pflag.CommandLine)
	pflag.Parse()

	if err := run(mgrOpts, natsOpts, imageOpts, refOpts); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", controllerName, err)
		os.Exit(1)
	}
}

func run(mgrOpts options.Manager, natsOpts options.NATS, imageOpts imageOptions, refOpts options.Reconcile) error {
	app.SetupLogger(mgrOpts)
	log := ctrl.Log.WithName(controllerName)
	if err := refOpts.Validate(); err != nil {
		return err
	}
	if err := imageOpts.Validate(); err != nil {
		return err
	}
	mgr, err := app.NewManager(controllerName, app.RESTConfig(mgrOpts), app.NewScheme(), mgrOpts,
		&imagev1.ImageRepository{}, &imagev1.ImagePolicy{}, &imagev1.ImageUpdateAutomation{})
	if err != nil {
		return err
	}
	// Events go to the API server and, with --nats-url, to the stream;
	// what is still queued is sent once the manager has stopped.
	recorder, closeEvents, err := events.NewManagerRecorder(mgr, natsOpts, controllerName, log)
	if err != nil {
		return err
	}
	defer closeEvents()
	flag := "--" + imagecontroller.AllowedNetworksFlag
	if err := imagecontroller.Setup(mgr, imagecontroller.Options{
		Events: recorder,
		Connection: imagecontroller.Connection{
			Addresses: netguard.Policy{Allowed: imageOpts.allowed, LoopbackFlag: flag, PrivateFlag: flag},
			Limits:    registry.Limits{MaxTags: imageOpts.MaxTags, MaxPages: imageOpts.MaxTagPages, MaxPageBytes: imageOpts.MaxResponseSize},
		},
		NoCrossNamespaceRefs: refOpts.NoCrossNamespaceRefs,
		RequeueDependency:    refOpts.RequeueDependency,
	}, controller.Options{MaxConcurrentReconciles: mgrOpts.Concurrent}); err != nil {
		return err
	}
	log.Info("starting", "allowedPrivateNetworks", imageOpts.AllowedNetworks, "maxTags", imageOpts.MaxTags)
	return mgr.Start(ctrl.SetupSignalHandler())
}
