package events

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/nats-io/nats.go"

	"plumb.dev/pkg/options"
)

// logEvery bounds how often a failure that goes on (NATS down, or refusing
// this client) is logged again.
const logEvery = time.Minute

// How often a client pings its server, and how many unanswered pings make
// it give the server up and reconnect to another.
const (
	pingInterval = 10 * time.Second
	maxPingsOut  = 2
)

// Conn is a long-lived connection to NATS that remembers why the server
// last refused it (credentials, permissions or TLS), so that a controller
// says so in its log, at error level, and in its readiness (Check).
type Conn struct {
	*nats.Conn
	url string
	log logr.Logger

	mu       sync.Mutex
	refused  error
	logged   string
	loggedAt time.Time
}

// Connect connects to opts.URL (one server, or the servers of a cluster as
// a comma-separated list, tried in random order), authenticating and
// checking the server's certificate as opts.Auth says, and keeps trying
// forever from the first attempt on: a controller starts and reconciles
// while NATS is down, and a refused connection is tried again each second,
// so a corrected Secret is picked up without a restart. name is the
// connection name the server shows; extra options are applied last. It
// fails only on options that cannot work.
func Connect(opts options.NATS, name string, log logr.Logger, extra ...nats.Option) (*Conn, error) {
	if opts.URL == "" {
		return nil, errors.New("no NATS URL")
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	auth, err := opts.Auth.ConnectOptions()
	if err != nil {
		return nil, err
	}
	c := &Conn{url: redactURL(opts.URL), log: log}
	all := append(auth,
		nats.Name(name),
		nats.RetryOnFailedConnect(true),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(time.Second),
		// A server whose node vanished sends nothing, not even a reset:
		// pings find it out within pingInterval × (maxPingsOut + 1), not
		// nats.go's default of six minutes, and the client moves on to
		// another server of the cluster.
		nats.PingInterval(pingInterval),
		nats.MaxPingsOutstanding(maxPingsOut),
		// By default nats.go gives up after the same authentication error
		// twice; a controller must go on trying until its Secret is fixed.
		nats.IgnoreAuthErrorAbort(),
		nats.ConnectHandler(func(*nats.Conn) { c.connected("connected to NATS") }),
		nats.ReconnectHandler(func(*nats.Conn) { c.connected("reconnected to NATS") }),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			switch {
			case err == nil:
			case IsRefused(err):
				c.Failed(err)
			default:
				c.log.Info("disconnected from NATS", "url", c.url, "error", err.Error())
			}
		}),
		nats.ReconnectErrHandler(func(_ *nats.Conn, err error) { c.Failed(err) }),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { c.Failed(err) }),
	)
	nc, err := nats.Connect(opts.URL, append(all, extra...)...)
	if err != nil {
		return nil, fmt.Errorf("connecting to NATS at %s: %w", c.url, err)
	}
	c.Conn = nc
	return c, nil
}

// connected clears a refusal of the connection itself; a refused
// permission stays until an operation succeeds (OK).
func (c *Conn) connected(msg string) {
	c.mu.Lock()
	wasRefused := c.refused != nil && !errors.Is(c.refused, nats.ErrPermissionViolation)
	if wasRefused {
		c.refused = nil
	}
	c.logged = ""
	c.mu.Unlock()
	c.log.Info(msg, "url", c.url)
}

// Failed records a failed connection attempt or operation. A refusal is
// logged at error level and makes Check fail until the connection or an
// operation succeeds; any other failure (NATS unreachable) is logged at
// info level. Both are logged when they start and once a minute while they
// last.
func (c *Conn) Failed(err error) {
	if err == nil {
		return
	}
	refused := IsRefused(err)
	c.mu.Lock()
	if refused {
		c.refused = err
	}
	msg := err.Error()
	again := msg == c.logged && time.Since(c.loggedAt) < logEvery
	if !again {
		c.logged, c.loggedAt = msg, time.Now()
	}
	c.mu.Unlock()
	if again {
		return
	}
	if refused {
		c.log.Error(err, "NATS refused this client: fix its credentials, permissions or TLS settings (--nats-* flags); retrying", "url", c.url)
		return
	}
	c.log.Info("cannot reach NATS, retrying", "url", c.url, "error", msg)
}

// OK records that an operation succeeded, which ends a refusal.
func (c *Conn) OK() {
	c.mu.Lock()
	c.refused = nil
	c.mu.Unlock()
}

// Refused returns why the server last refused this client, or nil.
func (c *Conn) Refused() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.refused
}

// Check is a readiness check (sigs.k8s.io/controller-runtime/pkg/healthz
// Checker): it fails while the server refuses this client, and passes
// while NATS is merely unreachable, since events wait in the queue then.
func (c *Conn) Check(*http.Request) error {
	if err := c.Refused(); err != nil {
		return fmt.Errorf("NATS at %s refused this client: %w", c.url, err)
	}
	return nil
}

// IsRefused reports whether err says that the NATS server refused the
// client (authentication, authorization, permissions), that the two sides
// disagree on TLS, or that a certificate or credentials file cannot be
// used: failures that retrying does not fix until the configuration
// changes, unlike a server that is down.
func IsRefused(err error) bool {
	for _, target := range []error{
		nats.ErrAuthorization, nats.ErrAuthExpired, nats.ErrAuthRevoked, nats.ErrAccountAuthExpired,
		nats.ErrPermissionViolation, nats.ErrSecureConnRequired, nats.ErrSecureConnWanted,
		// A failed handshake, or the server hanging up right after one:
		// how a server that wants a client certificate says no.
		nats.ErrTLS,
		nats.ErrNkeyButNoSigCB, nats.ErrUserButNoSigCB,
	} {
		if errors.Is(err, target) {
			return true
		}
	}
	var (
		verify    *tls.CertificateVerificationError
		authority x509.UnknownAuthorityError
		hostname  x509.HostnameError
		invalid   x509.CertificateInvalidError
		record    tls.RecordHeaderError
		path      *fs.PathError
		op        *net.OpError
	)
	switch {
	case errors.As(err, &verify), errors.As(err, &authority), errors.As(err, &hostname),
		errors.As(err, &invalid), errors.As(err, &record), errors.As(err, &path):
		return true
	case errors.As(err, &op) && op.Op == "remote error":
		// A TLS alert from the server, e.g. "tls: certificate required".
		return true
	}
	return false
}

// redactURL returns u, one URL or a comma-separated list, without user
// info (a user and password, or a token), for logs and readiness.
func redactURL(u string) string {
	list := strings.Split(u, ",")
	for i, one := range list {
		parsed, err := url.Parse(strings.TrimSpace(one))
		switch {
		case err != nil:
			list[i] = "(an unparsable URL)"
		case parsed.User != nil:
			parsed.User = url.User("redacted")
			list[i] = parsed.String()
		default:
			list[i] = parsed.String()
		}
	}
	return strings.Join(list, ",")
}
