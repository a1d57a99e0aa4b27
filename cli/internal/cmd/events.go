package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"plumb.dev/pkg/events"
	"plumb.dev/pkg/options"
)

// natsURLEnv overrides the default of --nats-url.
const natsURLEnv = "PLUMB_NATS_URL"

func newEventsCmd(g *globals) *cobra.Command {
	var (
		follow  bool
		forRef  string
		natsURL string
		auth    options.NATSAuth
		stream  string
		since   time.Duration
		ctrlNS  string
	)
	c := &cobra.Command{
		Use:   "events [--follow] [--for Kind/name]",
		Short: "Print the events Plumb's controllers publish on NATS JetStream",
		Long: "events reads the JetStream stream the controllers publish to (PLUMB_EVENTS)\n" +
			"with an ephemeral ordered consumer, so it leaves nothing behind on the server.\n" +
			"It prints the stored events and exits, or with --follow keeps printing new ones\n" +
			"until interrupted. --for Kind/name narrows to one object in the namespace\n" +
			"(-n, else the kubeconfig's); -n alone narrows to a namespace; by default every\n" +
			"event is shown. Drift events list their field changes (live → Git) and the field\n" +
			"manager that made each live value.\n\n" +
			"The NATS server is --nats-url, else $" + natsURLEnv + ", else the one the controllers\n" +
			"use: the --nats-url of the sync-controller (or notification-controller)\n" +
			"Deployment in --controller-namespace, $(VAR)s expanded from its environment.\n" +
			"When that in-cluster address cannot be reached from here, plumb says so with the\n" +
			"kubectl port-forward command to run. Without any, nats://127.0.0.1:4222.",
		Example: "  plumb events --follow\n  plumb events --for Kustomization/app -n team-a --since 1h",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			subject, err := g.eventSubject(forRef)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			if !follow {
				var cancel context.CancelFunc
				ctx, cancel = withTimeout(cmd, g)
				defer cancel()
			}
			if err := auth.Validate(); err != nil {
				return err
			}
			if !cmd.Flags().Changed("nats-url") {
				if natsURL, err = g.natsURL(cmd.Context(), ctrlNS); err != nil {
					return err
				}
			}
			return tailEvents(ctx, g.out, natsURL, auth, stream, subject, since, follow)
		},
	}
	f := c.Flags()
	f.BoolVarP(&follow, "follow", "f", false, "Keep printing new events until interrupted.")
	f.StringVar(&forRef, "for", "", "Only the events of one object, as Kind/name (e.g. Kustomization/app).")
	f.StringVar(&natsURL, "nats-url", "", "The NATS server; defaults to $"+natsURLEnv+", then the controllers' own (their Deployments' --nats-url), then nats://127.0.0.1:4222.")
	f.StringVar(&ctrlNS, "controller-namespace", controllerNamespace, "Where the controllers' Deployments are, to find their --nats-url.")
	f.StringVar(&stream, "stream", "PLUMB_EVENTS", "The JetStream stream that holds the events.")
	f.DurationVar(&since, "since", 0, "Only events newer than this (e.g. 30m); 0 shows every stored event.")
	// The controllers' own flags, so a user spells them the same way.
	auth.BindFlags(f)
	return c
}

// defaultNATSURL is the last resort of natsURL.
const defaultNATSURL = "nats://127.0.0.1:4222"

// natsURL is the NATS server when --nats-url is not given: $PLUMB_NATS_URL,
// else the controllers' own when this machine reaches it, else the default
// (with a note saying why).
func (g *globals) natsURL(ctx context.Context, ctrlNS string) (string, error) {
	if u := os.Getenv(natsURLEnv); u != "" {
		return u, nil
	}
	if err := g.kube(); err != nil {
		fmt.Fprintf(g.errOut, "note: no cluster to read the controllers' NATS address from (%v); trying %s\n", err, defaultNATSURL)
		return defaultNATSURL, nil
	}
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	src, err := g.discoverNATS(ctx, ctrlNS)
	if errors.Is(err, errNoNATSURL) {
		fmt.Fprintf(g.errOut, "note: %v; trying %s\n", err, defaultNATSURL)
		return defaultNATSURL, nil
	}
	if err != nil {
		return "", err
	}
	if err := src.reachable(ctx); err != nil {
		return "", err
	}
	return src.url, nil
}

// eventSubject returns the subject filter for --for and -n.
func (g *globals) eventSubject(forRef string) (string, error) {
	if forRef == "" {
		if g.namespaceFlag() == "" {
			return events.SubjectPrefix + ".>", nil
		}
		return strings.Join([]string{events.SubjectPrefix, "*", g.namespaceFlag(), "*"}, "."), nil
	}
	kind, name, ok := strings.Cut(forRef, "/")
	if !ok || kind == "" || name == "" || strings.Contains(name, "/") {
		return "", fmt.Errorf("--for %q: want Kind/name, e.g. Kustomization/app", forRef)
	}
	ns := g.namespaceFlag()
	if ns == "" {
		// The kubeconfig's namespace, as kubectl would take it; events
		// need no cluster, so a missing kubeconfig means "default".
		var err error
		if ns, _, err = g.clientConfig().Namespace(); err != nil || ns == "" {
			ns = "default"
		}
	}
	return events.Subject(kind, ns, name), nil
}

// tailEvents prints the events on subject, from the start of the stream or
// since a duration ago, and keeps going when follow is set.
func tailEvents(ctx context.Context, w io.Writer, url string, auth options.NATSAuth, streamName, subject string, since time.Duration, follow bool) error {
	authOpts, err := auth.ConnectOptions()
	if err != nil {
		return err
	}
	// A permission the server refuses arrives on its own, not as the
	// answer to a request: end whatever waits, and say why.
	ctx, refuse := context.WithCancelCause(ctx)
	defer refuse(nil)
	refused := func(err error) error {
		return fmt.Errorf("NATS at %s refused this client: %w (credentials: --nats-user and --nats-password-file, --nats-creds-file, --nats-nkey-file or --nats-token-file; TLS: --nats-ca-file, --nats-cert-file and --nats-key-file)", url, err)
	}
	nc, err := nats.Connect(url, append(authOpts,
		nats.Name("plumb-cli"),
		nats.Timeout(10*time.Second),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			if events.IsRefused(err) {
				refuse(refused(err))
			}
		}),
	)...)
	if err != nil {
		if events.IsRefused(err) {
			return refused(err)
		}
		return fmt.Errorf("connecting to NATS at %s: %w", url, err)
	}
	defer nc.Close()
	err = readEvents(ctx, w, nc, url, streamName, subject, since, follow)
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) && !errors.Is(cause, context.DeadlineExceeded) {
		return cause // refused
	}
	return err
}

// readEvents prints the events of one stream read through nc.
func readEvents(ctx context.Context, w io.Writer, nc *nats.Conn, url, streamName, subject string, since time.Duration, follow bool) error {
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	st, err := js.Stream(ctx, streamName)
	if err != nil {
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			return fmt.Errorf("NATS at %s has no stream %s: no controller has published yet, or --stream is wrong", url, streamName)
		}
		return fmt.Errorf("reading stream %s: %w", streamName, err)
	}
	cfg := jetstream.OrderedConsumerConfig{FilterSubjects: []string{subject}, DeliverPolicy: jetstream.DeliverAllPolicy}
	if since > 0 {
		start := time.Now().Add(-since)
		cfg.DeliverPolicy, cfg.OptStartTime = jetstream.DeliverByStartTimePolicy, &start
	}
	cons, err := st.OrderedConsumer(ctx, cfg)
	if err != nil {
		return fmt.Errorf("creating a consumer on %s: %w", streamName, err)
	}
	if !follow {
		info, err := cons.Info(ctx)
		if err != nil {
			return err
		}
		if info.NumPending == 0 {
			return nil
		}
	}
	it, err := cons.Messages()
	if err != nil {
		return err
	}
	defer it.Stop()
	stop := context.AfterFunc(ctx, it.Stop)
	defer stop()
	for {
		msg, err := it.Next()
		if err != nil {
			if ctx.Err() != nil {
				if follow {
					return nil // interrupted: the normal end of --follow
				}
				return fmt.Errorf("reading events: %w", ctx.Err())
			}
			return fmt.Errorf("reading events: %w", err)
		}
		if e, err := events.Decode(msg.Data()); err != nil {
			fmt.Fprintf(w, "! undecodable event on %s: %v\n", msg.Subject(), err)
		} else {
			printEvent(w, e)
		}
		if follow {
			continue
		}
		md, err := msg.Metadata()
		if err != nil {
			return err
		}
		if md.NumPending == 0 {
			return nil
		}
	}
}

// printEvent writes one event as a line, with drift changes below it.
func printEvent(w io.Writer, e *events.Event) {
	obj := e.InvolvedObject.Kind + "/"
	if e.InvolvedObject.Namespace != "" {
		obj += e.InvolvedObject.Namespace + "/"
	}
	obj += e.InvolvedObject.Name
	line := fmt.Sprintf("%s  %-5s  %s  %s  %s", e.Timestamp.UTC().Format(time.RFC3339), e.Severity, obj, e.Reason, oneLine(e.Message))
	if e.Revision != "" {
		line += "  (" + e.Revision + ")"
	}
	fmt.Fprintln(w, line)
	for _, c := range e.Changes {
		line := fmt.Sprintf("    %s %s: %s → %s", c.Object, c.Path, value(c.Before), value(c.After))
		if c.Manager != "" {
			line += "  (by " + c.Manager + ")" // who made the live value
		}
		fmt.Fprintln(w, line)
	}
}
