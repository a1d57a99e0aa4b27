// Command source-controller reconciles GitRepository objects into tar.gz
// artifacts and serves them over HTTP to the other Plumb controllers.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/pflag"
	ctrl "sigs.k8s.io/controller-runtime"

	"plumb.dev/pkg/app"
	"plumb.dev/pkg/options"
)

const controllerName = "source-controller"

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
