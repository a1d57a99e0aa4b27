package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"time"

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
			"prints its address with a one-time sign-in secret and opens it in the browser\n" +
			"(through a sign-in page only you may read, so the secret is never on a command line).\n" +
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
			// The full address, secret and all, goes to this terminal
			// only: never into a process's argv, which every local user
			// reads in /proc/*/cmdline.
			fmt.Fprintf(g.out, "► Plumb UI on %s\n  open %s\n  (Ctrl-C stops it)\n", srv.URL(), url)
			if !noOpen {
				page, err := writeSignInPage(url)
				if err == nil {
					defer page.remove()
					go page.removeOnceUsed(ctx, srv.LoginSecret)
					err = openBrowser(page.path)
				}
				if err != nil {
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

// openBrowser opens a file or address in the desktop's browser (tests
// replace it).
var openBrowser = openWithDesktop

// signInPageTTL is how long the sign-in page stays on disk when the
// browser never uses it (no browser came up, another one was used).
const signInPageTTL = 2 * time.Minute

// signInPage is a file that sends the browser to the sign-in address.
// The desktop's opener and the browser are processes whose arguments any
// local user can read (/proc/*/cmdline), so they get the file's path, not
// the address with the one-time secret: the secret is in the file, which
// only this user may read (0600 in a 0700 directory of its own), and it
// reaches the page as the address's fragment, which the browser does not
// send to the server and the page removes from its address before it
// signs in. The directory is removed once the secret was used, after
// signInPageTTL, or when `plumb ui` stops, whichever comes first.
type signInPage struct {
	dir, path string
	once      sync.Once
}

// writeSignInPage writes the page that opens loginURL.
func writeSignInPage(loginURL string) (*signInPage, error) {
	dir, err := os.MkdirTemp("", "plumb-ui-") // 0700
	if err != nil {
		return nil, err
	}
	p := &signInPage{dir: dir, path: filepath.Join(dir, "sign-in.html")}
	target, err := json.Marshal(loginURL) // a JS string; <, > and & escaped
	if err != nil {
		p.remove()
		return nil, err
	}
	page := "<!doctype html>\n<meta charset=\"utf-8\">\n<title>Plumb: signing in</title>\n" +
		"<script>location.replace(" + string(target) + ");</script>\n" +
		"<p><a href=\"" + html.EscapeString(loginURL) + "\">Open Plumb</a></p>\n"
	if err := os.WriteFile(p.path, []byte(page), 0o600); err != nil {
		p.remove()
		return nil, err
	}
	return p, nil
}

// removeOnceUsed removes the page when the secret it holds was used
// (secret, the server's current one, changed), after signInPageTTL, or
// when ctx ends.
func (p *signInPage) removeOnceUsed(ctx context.Context, secret func() string) {
	defer p.remove()
	first := secret()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	expire := time.After(signInPageTTL)
	for {
		select {
		case <-ctx.Done():
			return
		case <-expire:
			return
		case <-tick.C:
			if secret() != first {
				return
			}
		}
	}
}

func (p *signInPage) remove() { p.once.Do(func() { _ = os.RemoveAll(p.dir) }) }

// openWithDesktop opens target (a file or an address) with the desktop's
// opener, without waiting for the browser (the opener is reaped in the
// background).
func openWithDesktop(target string) error {
	var opener *exec.Cmd
	switch runtime.GOOS {
	case "darwin":
		opener = exec.Command("open", target)
	case "windows":
		opener = exec.Command("rundll32", "url.dll,FileProtocolHandler", target)
	default:
		opener = exec.Command("xdg-open", target)
	}
	if err := opener.Start(); err != nil {
		return err
	}
	go func() { _ = opener.Wait() }()
	return nil
}
