// Command plumb is Plumb's command-line client: it lists Plumb objects,
// asks for reconciles and waits for them, shows drift between Git and the
// cluster, the objects a Kustomization manages with their health, and the
// event stream. It reads the kubeconfig the way kubectl does.
package main

import (
	"plumb.dev/pkg/renderworker"

	"context"
	"os"
	"os/signal"
	"syscall"

	"plumb.dev/cli/internal/cmd"
)

func main() {
	// `plumb build` and `plumb diff --path` render in a worker: this
	// program started again (pkg/renderworker).
	renderworker.ServeIfWorker()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cmd.Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
