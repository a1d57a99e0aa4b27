package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/fluxcd/pkg/runtime/logger"
	"github.com/spf13/pflag"
	ctrl "sigs.k8s.io/controller-runtime"

	"plumb.dev/pkg/options"
	"plumb.dev/ui/internal/stream"
	"plumb.dev/ui/server"
)

const programName = "ui"

// flags are the ui program's own options.
type flags struct {
	Listen              string
	Auth                string
	SessionTTL          time.Duration
	InsecureCookies     bool
	ControllerNamespace string
}

// BindFlags registers the ui program's flags on fs.
func (f *flags) BindFlags(fs *pflag.FlagSet) {
	fs.StringVar(&f.Listen, "listen", server.DefaultListen,
		"The address the UI serves on; fd:N serves on the listening socket inherited as file descriptor N. With --auth=kubeconfig it must be a loopback address.")
	fs.StringVar(&f.Auth, "auth", server.AuthToken,
		"How users sign in: token (each with a Kubernetes bearer token the UI then acts with) or kubeconfig (one user, the kubeconfig's, behind a one-time secret in the printed address).")
	fs.DurationVar(&f.SessionTTL, "session-ttl", server.DefaultSessionTTL,
		"How long a session lasts after sign-in.")
	fs.BoolVar(&f.InsecureCookies, "insecure-cookies", false,
		"Leave the Secure attribute off the session cookie, for a UI reached over plain HTTP (a port-forward); never behind a public address.")
	fs.StringVar(&f.ControllerNamespace, "controller-namespace", server.DefaultControllerNamespace,
		"The namespace Plumb's controllers run in.")
}

// Validate reports flag values that cannot work.
func (f *flags) Validate() error {
	if f.Auth != server.AuthToken && f.Auth != server.AuthKubeconfig {
		return fmt.Errorf("--auth must be token or kubeconfig, not %q", f.Auth)
	}
	if f.SessionTTL <= 0 {
		return fmt.Errorf("--session-ttl must be positive, got %s", f.SessionTTL)
	}
	return nil
}

func main() {
	var (
		uiFlags    flags
		natsOpts   options.NATS
		streamOpts stream.Config
		logOpts    logger.Options
	)
	uiFlags.BindFlags(pflag.CommandLine)
	natsOpts.BindReaderFlags(pflag.CommandLine)
	streamOpts.BindFlags(pflag.CommandLine)
	logOpts.BindFlags(pflag.CommandLine)
	// --kubeconfig, as controller-runtime's config loading reads it.
	if kc := flag.CommandLine.Lookup("kubeconfig"); kc != nil {
		pflag.CommandLine.AddGoFlag(kc)
	}
	pflag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	streamOpts.NATS = natsOpts
	if err := run(ctx, uiFlags, streamOpts, logOpts); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", programName, err)
		os.Exit(1)
	}
}

func run(ctx context.Context, f flags, streamOpts stream.Config, logOpts logger.Options) error {
	if err := f.Validate(); err != nil {
		return err
	}
	if err := streamOpts.Validate(); err != nil {
		return err
	}
	logger.SetLogger(logger.NewLogger(logOpts))
	log := ctrl.Log.WithName(programName)
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("loading the kubeconfig: %w", err)
	}
	srv, err := server.New(ctx, server.Options{
		Listen: f.Listen, Auth: f.Auth, Config: cfg, SessionTTL: f.SessionTTL, InsecureCookies: f.InsecureCookies,
		NATS: streamOpts.NATS, MaxEvents: streamOpts.MaxEvents, MaxEventBytes: streamOpts.MaxBytes,
		ControllerNamespace: f.ControllerNamespace, Log: log,
	})
	if err != nil {
		return err
	}
	log.Info("serving", "address", srv.Addr(), "auth", f.Auth)
	if f.Auth == server.AuthKubeconfig {
		// The one place the secret is shown: the user opens this address.
		fmt.Fprintf(os.Stdout, "Plumb UI: %s\n", srv.LoginURL())
	}
	if err := srv.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}
