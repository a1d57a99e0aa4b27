package cmd

import (
	"fmt"
	"os/exec"
	"runtime"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"plumb.dev/pkg/options"
	"plumb.dev/ui/server"
)

func newUICmd(g *globals) *cobra.Command {
	var (
		address string
		noOpen  bool
		natsURL string
		auth    options.NATSAuth
		stream  string
		ctrlNS  string
	)
	c := &cobra.Command{
		Use:   "ui [--address 127.0.0.1:9080] [--no-open]",
		Short: "Serve Plumb's web UI on this machine, with your kubeconfig's identity",
		Long: "ui runs Plumb's web UI in this process on a loopback address, acting with the\n" +
			"kubeconfig's credentials (so your RBAC applies to everything it shows and does),\n" +
			"prints its address with a one-time sign-in secret and opens it in the browser.\n" +
			"It serves until interrupted. The event history and drift timeline are read from\n" +
			"NATS as `plumb events` finds it: --nats-url, else $" + natsURLEnv + ", else the\n" +
			"controllers' own.",
		Example: "  plumb ui\n  plumb ui --address 127.0.0.1:8080 --no-open",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := auth.Validate(); err != nil {
				return err
			}
			if err := g.kube(); err != nil {
				return err
			}
			// The server makes a client per sign-in; controller-runtime
			// warns on stderr about a logger never set once a process
			// lives longer than 30 s. plumb prints what matters itself.
			ctrllog.SetLogger(logr.Discard())
			ctx := cmd.Context()
			if !cmd.Flags().Changed("nats-url") {
				var err error
				if natsURL, err = g.natsURL(ctx, ctrlNS); err != nil {
					return err
				}
			}
			srv, err := server.New(ctx, server.Options{
				Listen: address, Auth: server.AuthKubeconfig, Config: g.cfg,
				NATS:                options.NATS{URL: natsURL, Auth: auth, Stream: stream},
				ControllerNamespace: ctrlNS,
			})
			if err != nil {
				return err
			}
			url := srv.LoginURL()
			fmt.Fprintf(g.out, "► Plumb UI on %s\n  open %s\n  (Ctrl-C stops it)\n", srv.URL(), url)
			if !noOpen {
				if err := openBrowser(url); err != nil {
					fmt.Fprintf(g.errOut, "◎ could not open a browser (%v): open the address above\n", err)
				}
			}
			return srv.Run(ctx)
		},
	}
	f := c.Flags()
	f.StringVar(&address, "address", server.DefaultListen, "The loopback address to serve on; 127.0.0.1:0 picks a free port.")
	f.BoolVar(&noOpen, "no-open", false, "Print the address only; do not open a browser.")
	f.StringVar(&natsURL, "nats-url", "", "The NATS server of the event stream; defaults to $"+natsURLEnv+", then the controllers' own (their Deployments' --nats-url), then nats://127.0.0.1:4222.")
	f.StringVar(&ctrlNS, "controller-namespace", controllerNamespace, "Where the controllers' Deployments are, to find their --nats-url.")
	f.StringVar(&stream, "stream", options.DefaultStream, "The JetStream stream that holds the events.")
	auth.BindFlags(f)
	return c
}

// openBrowser opens url with the desktop's opener, without waiting for the
// browser (the opener is reaped in the background).
func openBrowser(url string) error {
	var opener *exec.Cmd
	switch runtime.GOOS {
	case "darwin":
		opener = exec.Command("open", url)
	case "windows":
		opener = exec.Command("rundll32", "url.dll,FileProtocolHandler", url)
	default:
		opener = exec.Command("xdg-open", url)
	}
	if err := opener.Start(); err != nil {
		return err
	}
	go func() { _ = opener.Wait() }()
	return nil
}
