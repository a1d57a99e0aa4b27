// Command notification-controller turns the events that Plumb controllers
// publish on NATS JetStream into alerts (Alert, Provider) and receives Git
// host webhooks (Receiver) that trigger an immediate reconcile.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/pflag"
	ctrl "sigs.k8s.io/controller-runtime"

	"plumb.dev/pkg/app"
	"plumb.dev/pkg/options"
)

const controllerName = "notification-controller"

func main() {
	var (
		mgrOpts     options.Manager
		natsOpts    options.NATS
	)
	mgrOpts.BindFlags(pflag.CommandLine)
	natsOpts.BindFlags(pflag.CommandLine)
	pflag.Parse()

	if err := run(mgrOpts, natsOpts); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", controllerName, err)
		os.Exit(1)
	}
}

func run(mgrOpts options.Manager, natsOpts options.NATS) error {
	app.SetupLogger(mgrOpts)
	mgr, err := app.NewManager(controllerName, app.RESTConfig(mgrOpts), app.NewScheme(), mgrOpts)
	if err != nil {
		return err
	}
	_ = natsOpts
	return mgr.Start(ctrl.SetupSignalHandler())
}
