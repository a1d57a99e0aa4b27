// Command sync-controller makes the cluster equal to each Kustomization's
// rendered manifests: it diffs with server-side dry-run, applies what changed
// with server-side apply in waves and hooks, prunes, waits for health, and
// corrects drift as soon as a foreign change lands.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/pflag"
	ctrl "sigs.k8s.io/controller-runtime"

	"plumb.dev/pkg/app"
	"plumb.dev/pkg/options"
)

const controllerName = "sync-controller"

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
