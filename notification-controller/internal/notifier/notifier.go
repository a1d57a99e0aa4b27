package notifier

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	notificationv1 "plumb.dev/api/notification/v1"
	"plumb.dev/pkg/events"
	"plumb.dev/pkg/githubapp"
	"plumb.dev/pkg/message"
)

// Notifier sends one event to one destination.
type Notifier interface {
	Post(ctx context.Context, e events.Event) error
}

// Config is everything a notifier needs, with the secret values resolved.
type Config struct {
	// Type is one of the Provider types.
	Type string
	// Address is the webhook URL, or the NATS server URL.
	Address string
	// Channel is the Slack channel, or the NATS subject.
	Channel string
	// Username is the sender's display name (Slack, Discord).
	Username string
	// Token is the HMAC key for generic-hmac, a bearer token for the HTTP
	// types, and the NATS token for nats.
	Token string
	// GitHubApp, read from the Secret's githubApp* keys, authenticates the
	// github types as a GitHub App: AuthenticateApp mints Token with it and
	// sets AppLogin, the login of what the App writes, for the comment
	// provider.
	GitHubApp *githubapp.App
	AppLogin  string
	// User and Password authenticate to NATS.
	User, Password string
	// Headers are extra HTTP headers (generic, generic-hmac).
	Headers map[string]string
	// Credentials is true when the configuration holds a secret: the
	// Provider has a Secret, or its address carries user info.
	Credentials bool
	// Insecure is the Provider's spec.insecure: credentials may travel
	// without TLS.
	Insecure bool
	// ProviderUID is the Provider's UID: commit statuses name their
	// context after it, so each cluster's statuses are its own.
	ProviderUID string
	// CommitStatusExpr is the Provider's spec.commitStatusExpr, which
	// names a commit status instead (statusexpr.go); Provider is the
	// object it reads as provider.
	CommitStatusExpr string
	Provider         *notificationv1.Provider
	// TLS is the Provider's certSecretRef (its CA, a client certificate);
	// nil uses the system roots.
	TLS *tls.Config
	// Proxy is the Provider's proxySecretRef, with its credentials as
	// user info; nil uses the Client's (the environment's).
	Proxy *url.URL
	// Client sends HTTP requests; a plain &http.Client{} when nil (tests).
	// The dispatcher's comes from NewHTTPClient.
	Client *http.Client
	// Dialer connects to NATS servers; the default dialer when nil. The
	// dispatcher's comes from AddressPolicy.Dialer.
	Dialer *net.Dialer

	// ThreadPerObject is the Provider's spec.threadPerObject: messages
	// about one object are grouped (a Slack or Google Chat thread, a
	// Zulip topic).
	ThreadPerObject bool
	// Threads remembers the Slack thread of each object; the dispatcher
	// owns it (ThreadStore.For), so it outlives the notifiers it caches.
	// Nil posts every message in the channel.
	Threads *Threads
}

// PermanentError is a failure that retrying cannot fix, such as a 400 or
// 404 answer: the dispatcher gives up at once.
type PermanentError struct{ Err error }

func (e *PermanentError) Error() string { return e.Err.Error() }
func (e *PermanentError) Unwrap() error { return e.Err }

// IsPermanent reports whether retrying err is pointless: a PermanentError,
// or an address the AddressPolicy refuses.
func IsPermanent(err error) bool {
	var p *PermanentError
	return errors.As(err, &p) || isRefused(err)
}

// SignatureHeader is the header generic-hmac deliveries carry.
const SignatureHeader = "X-Signature"

// maxResponse bounds how much of an answer is read (and thrown away), to
// reuse connections.
const maxResponse = 64 << 10

// New returns the notifier for cfg.Type.
func New(cfg Config) (Notifier, error) {
	if cfg.Client == nil {
		cfg.Client = &http.Client{}
	}
	if cfg.TLS != nil || cfg.Proxy != nil {
		c, err := cfg.ownClient()
		if err != nil {
			return nil, err
		}
		cfg.Client = c
	}
	k, ok := kinds[cfg.Type]
	if !ok {
		return nil, fmt.Errorf("unknown provider type %q", cfg.Type)
	}
	n, err := k.build(cfg)
	if err != nil || cfg.CommitStatusExpr == "" {
		return n, err
	}
	cs, ok := n.(*commitStatusNotifier)
	if !ok {
		return nil, fmt.Errorf("spec.commitStatusExpr names a commit status, which a %s provider does not post", cfg.Type)
	}
	if cs.expr, err = newStatusExpr(cfg); err != nil {
		return nil, err
	}
	return cs, nil
}

// coreKinds are the webhook and NATS providers.
var coreKinds = map[string]kind{
	notificationv1.SlackProvider:   {build: slackKind},
	notificationv1.DiscordProvider: {build: httpKind(discordPayload)},
	notificationv1.MSTeamsProvider: {build: httpKind(teamsPayload)},
	notificationv1.GenericProvider: {build: httpKind(eventPayload)},
	notificationv1.GenericHMACProvider: {token: "the HMAC signing key", build: func(cfg Config) (Notifier, error) {
		if cfg.Token == "" {
			return nil, errors.New("generic-hmac needs a token to sign with")
		}
		return &httpNotifier{cfg: cfg, render: eventPayload, sign: true}, nil
	}},
	notificationv1.NATSProvider: {nats: true, build: func(cfg Config) (Notifier, error) {
		if cfg.Channel == "" {
			return nil, errors.New("a nats provider needs a channel (the subject)")
		}
		if err := checkNATSSubject(cfg.Channel); err != nil {
			return nil, err
		}
		return &natsNotifier{cfg: cfg}, nil
	}},
}

// httpKind builds a webhook notifier that posts render's payload.
func httpKind(render func(Config, events.Event) any) func(Config) (Notifier, error) {
	return func(cfg Config) (Notifier, error) { return &httpNotifier{cfg: cfg, render: render}, nil }
}

// httpNotifier posts a JSON payload to a webhook.
type httpNotifier struct {
	cfg    Config
	render func(Config, events.Event) any
	sign   bool
}

func (n *httpNotifier) Post(ctx context.Context, e events.Event) error {
	body, err := json.Marshal(n.render(n.cfg, withoutUserInfo(e)))
	if err != nil {
		return &PermanentError{Err: fmt.Errorf("encoding the %s payload: %w", n.cfg.Type, err)}
	}
	header := http.Header{}
	for k, v := range n.cfg.Headers {
		header.Set(k, v)
	}
	switch {
	case n.sign:
		header.Set(SignatureHeader, Sign(n.cfg.Token, body))
	case n.cfg.Token != "":
		header.Set("Authorization", "Bearer "+n.cfg.Token)
	}
	return n.cfg.send(ctx, request{method: http.MethodPost, url: n.cfg.Address, body: body, header: header})
}

// redact drops the URL from a transport error: webhook URLs hold secrets.
func redact(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// withoutUserInfo strips the user info of every URL in the event's text
// (message, metadata, drift values): a controller that quoted a URL with
// credentials must not have them forwarded to a chat channel.
func withoutUserInfo(e events.Event) events.Event {
	e.Message = message.StripUserInfo(e.Message)
	if len(e.Metadata) > 0 {
		meta := make(map[string]string, len(e.Metadata))
		for k, v := range e.Metadata {
			meta[k] = message.StripUserInfo(v)
		}
		e.Metadata = meta
	}
	if len(e.Changes) > 0 {
		changes := make([]events.Change, len(e.Changes))
		for i, c := range e.Changes {
			c.Before, c.After = message.StripUserInfo(c.Before), message.StripUserInfo(c.After)
			changes[i] = c
		}
		e.Changes = changes
	}
	return e
}

// Sign returns the generic-hmac signature header value of body:
// sha256=<hex of HMAC-SHA256 keyed with token>.
func Sign(token string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(token))
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// natsNotifier publishes the event JSON on a subject of a NATS server, so
// other systems can subscribe to drift and health alerts.
type natsNotifier struct{ cfg Config }

func (n *natsNotifier) Post(ctx context.Context, e events.Event) error {
	body, err := json.Marshal(withoutUserInfo(e))
	if err != nil {
		return &PermanentError{Err: fmt.Errorf("encoding the event: %w", err)}
	}
	timeout := 15 * time.Second
	if d, ok := ctx.Deadline(); ok {
		timeout = time.Until(d)
	}
	opts := []nats.Option{nats.Name("plumb-notification-controller"), nats.Timeout(timeout), nats.NoReconnect()}
	if n.cfg.Dialer != nil {
		opts = append(opts, nats.SetCustomDialer(n.cfg.Dialer))
	}
	switch {
	case n.cfg.TLS != nil:
		// A certSecretRef's CA or client certificate means TLS.
		opts = append(opts, nats.Secure(n.cfg.TLS.Clone()))
	case n.cfg.Credentials && !n.cfg.Insecure:
		// Credentials go over TLS only: a server that does not offer it
		// is refused before they are sent.
		opts = append(opts, nats.Secure(&tls.Config{MinVersion: tls.VersionTLS12}))
	}
	switch {
	case n.cfg.Token != "":
		opts = append(opts, nats.Token(n.cfg.Token))
	case n.cfg.User != "":
		opts = append(opts, nats.UserInfo(n.cfg.User, n.cfg.Password))
	}
	nc, err := nats.Connect(n.cfg.Address, opts...)
	if err != nil {
		return fmt.Errorf("connecting to the nats provider's server: %w", redact(err))
	}
	defer nc.Close()
	if err := nc.Publish(n.cfg.Channel, body); err != nil {
		return fmt.Errorf("publishing on %s: %w", n.cfg.Channel, err)
	}
	// Flush waits for the server's answer, so a delivery counts only once
	// the server has the message.
	if err := nc.FlushWithContext(ctx); err != nil {
		return fmt.Errorf("publishing on %s: %w", n.cfg.Channel, err)
	}
	return nil
}

// fact is a titled value shown under an alert.
type fact struct{ Title, Value string }

// facts lists what an alert shows besides its message, in a fixed order:
// revision, summary, drifted fields, then the metadata sorted by key.
func facts(e events.Event) []fact {
	var out []fact
	if e.Revision != "" {
		out = append(out, fact{"Revision", e.Revision})
	}
	if s := e.Metadata[SummaryKey]; s != "" {
		out = append(out, fact{"Summary", s})
	}
	if d := driftText(e.Changes); d != "" {
		out = append(out, fact{"Drift", d})
	}
	keys := make([]string, 0, len(e.Metadata))
	for k := range e.Metadata {
		if k != SummaryKey {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		out = append(out, fact{k, e.Metadata[k]})
	}
	return out
}

// SummaryKey is the metadata key under which an Alert's summary travels.
const SummaryKey = "summary"

// maxDriftLines bounds the drift paths listed in chat messages.
const maxDriftLines = 10

func driftText(changes []events.Change) string {
	var b strings.Builder
	for i, c := range changes {
		if i == maxDriftLines {
			fmt.Fprintf(&b, "… and %d more", len(changes)-maxDriftLines)
			break
		}
		fmt.Fprintf(&b, "%s %s", c.Object, c.Path)
		if c.Manager != "" {
			fmt.Fprintf(&b, " (by %s)", c.Manager) // who made the live value
		}
		b.WriteByte('\n')
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// clipRunes cuts s to at most limit characters, marking the cut with "…":
// the services count characters, not bytes.
func clipRunes(s string, limit int) string {
	if limit <= 0 {
		return ""
	}
	r := []rune(s)
	if len(r) <= limit {
		return s
	}
	return string(r[:limit-1]) + "…"
}

// objectTitle is kind/namespace/name in lower-case kind, like Flux.
func objectTitle(e events.Event) string {
	o := e.InvolvedObject
	if o.Namespace == "" {
		return strings.ToLower(o.Kind) + "/" + o.Name
	}
	return strings.ToLower(o.Kind) + "/" + o.Namespace + "/" + o.Name
}

func eventPayload(_ Config, e events.Event) any { return e }
