// Command render-controller renders Kustomization objects into manifests
// artifacts: it downloads and verifies the source artifact, runs kustomize and
// variable substitution, and serves the result over HTTP.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/pflag"
	ctrl "sigs.k8s.io/controller-runtime"

	"plumb.dev/pkg/app"
	"plumb.dev/pkg/options"
)

const controllerName = "render-controller"

func main() {
	var (
		mgrOpts     options.Manager
		natsOpts    options.NATS
		storageOpts options.Storage
	)
	mgrOpts.BindFlags(pflag.CommandLine)
	natsOpts.BindFlags(pflag.CommandLine)
	storageOpts.BindFlags(pflag.CommandLine)
	pflag.Parse()

	if err := run(mgrOpts, natsOpts, storageOpts); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", controllerName, err)
		os.Exit(1)
	}
}

func run(mgrOpts options.Manager, natsOpts options.NATS, storageOpts options.Storage) error {
	app.SetupLogger(mgrOpts)
	if err := storageOpts.Validate(); err != nil {
		return err
	}
	mgr, err := app.NewManager(controllerName, app.RESTConfig(mgrOpts), app.NewScheme(), mgrOpts)
	if err != nil {
		return err
	}
	_ = natsOpts
	return mgr.Start(ctrl.SetupSignalHandler())
}
