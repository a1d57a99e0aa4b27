package events

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/go-logr/logr/testr"
	"github.com/nats-io/nats.go"
	. "github.com/onsi/gomega"

	"plumb.dev/pkg/options"
	"plumb.dev/pkg/testenv"
)

// logBuffer collects what a logger writes, for tests that check what a
// controller says.
type logBuffer struct {
	mu    sync.Mutex
	lines []string
}

func (b *logBuffer) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.lines = append(b.lines, prefix+" "+args)
	}, funcr.Options{})
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Join(b.lines, "\n")
}

// TestAPublisherTheServerRefusesSaysSo: a controller whose credentials or
// TLS settings the server does not accept starts anyway, keeps its events,
// logs at error level that NATS refused it and why, and fails its
// readiness check with the reason.
func TestAPublisherTheServerRefusesSaysSo(t *testing.T) {
	env := environment(t)
	good := env.SecureNATS.Auth(testenv.NATSPublisher)
	wrongPassword := filepath.Join(t.TempDir(), "password")
	if err := os.WriteFile(wrongPassword, []byte("not-the-password\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	plain := "nats://" + strings.TrimPrefix(env.NATSURL, "tls://")
	for _, tc := range []struct {
		name string
		opts func(o *options.NATS)
		want string
	}{
		// nats.go upgrades to the TLS the server asks for, and then does
		// not trust a certificate no system CA signed.
		{"a nats:// URL and no settings", func(o *options.NATS) { o.URL, o.Auth = plain, options.NATSAuth{} }, "certificate signed by unknown authority"},
		{"TLS but no user", func(o *options.NATS) { o.Auth = env.SecureNATS.TLSOnly() }, "authorization violation"},
		{"a wrong password", func(o *options.NATS) { o.Auth.PasswordFile = wrongPassword }, "authorization violation"},
		// The server refuses with a TLS alert, or hangs up, whichever the
		// client reads first.
		{"no client certificate", func(o *options.NATS) { o.Auth.CertFile, o.Auth.KeyFile = "", "" }, "tls"},
		{"a CA that did not sign the server's certificate", func(o *options.NATS) { o.Auth.CAFile = good.CertFile }, "certificate signed by unknown authority"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			opts := envOptions(env)
			tc.opts(&opts)
			reason := "(?i)" + regexp.QuoteMeta(tc.want)
			var logs logBuffer
			p, err := NewJetStreamPublisher(opts, "refused-test", logs.logger())
			g.Expect(err).NotTo(HaveOccurred(), "a controller starts while NATS refuses it")
			defer closeNow(p)
			p.Publish(testEvent("refused", 0))
			defer func() {
				if t.Failed() {
					t.Log(logs.String())
				}
			}()

			g.Eventually(func() error { return p.Check(nil) }, 20*time.Second, 50*time.Millisecond).Should(
				MatchError(And(ContainSubstring("NATS at "+opts.URL+" refused this client"), MatchRegexp(reason))))
			// funcr writes an error log line with an "error" key and no level.
			g.Eventually(logs.String).Should(MatchRegexp(`"msg"="NATS refused this client: fix its credentials, permissions or TLS settings[^\n]*"error"="[^\n]*` + reason))
			g.Expect(p.Len()).To(Equal(1), "the event waits in the queue")
		})
	}
}

// TestAPublisherRecoversWhenItsSecretIsFixed: the password file is read on
// every connect, so a corrected Secret (its mounted file rewritten) is
// picked up without a restart, and the queued events are stored.
func TestAPublisherRecoversWhenItsSecretIsFixed(t *testing.T) {
	env := environment(t)
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	password := filepath.Join(t.TempDir(), "password")
	g.Expect(os.WriteFile(password, []byte("stale"), 0o600)).To(Succeed())
	opts := envOptions(env)
	opts.Auth.PasswordFile = password
	p, err := NewJetStreamPublisher(opts, "test", testr.New(t))
	g.Expect(err).NotTo(HaveOccurred())
	defer p.Close(ctx)
	p.Publish(testEvent("rotated", 0))
	g.Eventually(func() error { return p.Check(nil) }, 20*time.Second, 50*time.Millisecond).Should(HaveOccurred())

	g.Expect(os.WriteFile(password, []byte(env.SecureNATS.Passwords[testenv.NATSPublisher]+"\n"), 0o600)).To(Succeed())
	g.Eventually(p.Len, 30*time.Second, 100*time.Millisecond).Should(BeZero())
	g.Expect(p.Check(nil)).To(Succeed())
	g.Expect(messages(stored(ctx, t, "rotated", 1))).To(Equal([]string{"event 0"}))
}

// TestAPublisherWithCredentialsIsReady: with the controllers' user, TLS and
// a client certificate, a publisher stores events and is ready.
func TestAPublisherWithCredentialsIsReady(t *testing.T) {
	env := environment(t)
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := NewJetStreamPublisher(envOptions(env), "test", testr.New(t))
	g.Expect(err).NotTo(HaveOccurred())
	p.Publish(testEvent("ready", 0))
	g.Expect(p.Close(ctx)).To(Succeed())
	g.Expect(p.Check(nil)).To(Succeed())
	g.Expect(messages(stored(ctx, t, "ready", 1))).To(Equal([]string{"event 0"}))
}

// TestEachRoleMayDoOnlyItsPart checks deploy/nats/accounts.conf on the
// server: the controllers publish events and nothing else, the nats alert
// provider's user cannot reach Plumb's subjects or the JetStream API, and
// `plumb events` reads without touching notification-controller's
// consumer.
func TestEachRoleMayDoOnlyItsPart(t *testing.T) {
	env := environment(t)
	const event = "plumb.events.test.default.permissions"
	type check struct {
		sub     bool // subscribe rather than publish
		subject string
		allowed bool
	}
	pub := func(subject string, allowed bool) check { return check{subject: subject, allowed: allowed} }
	sub := func(subject string, allowed bool) check { return check{sub: true, subject: subject, allowed: allowed} }
	for user, checks := range map[string][]check{
		testenv.NATSPublisher: {
			pub(event, true),
			pub("$JS.API.STREAM.UPDATE.PLUMB_EVENTS", true),
			pub("$JS.API.STREAM.DELETE.PLUMB_EVENTS", false),
			pub("$JS.API.STREAM.PURGE.PLUMB_EVENTS", false),
			pub("$JS.API.STREAM.CREATE.OTHER", false),
			pub("$JS.API.CONSUMER.CREATE.PLUMB_EVENTS.mine", false),
			pub("$JS.API.CONSUMER.MSG.NEXT.PLUMB_EVENTS.notification-controller", false),
			pub("alerts.team-a", false),
			sub("_INBOX.publisher.x", true),
			sub("_INBOX.notification.>", false),
			sub("plumb.events.>", false),
		},
		testenv.NATSNotification: {
			pub(event, true),
			pub("$JS.API.CONSUMER.MSG.NEXT.PLUMB_EVENTS.notification-controller", true),
			pub("$JS.API.CONSUMER.DELETE.PLUMB_EVENTS.notification-controller", false),
			pub("$JS.API.CONSUMER.CREATE.PLUMB_EVENTS.other", false),
			pub("$JS.API.STREAM.DELETE.PLUMB_EVENTS", false),
			sub("_INBOX.notification.x", true),
			sub("_INBOX.publisher.>", false),
		},
		testenv.NATSReader: {
			pub("$JS.API.STREAM.INFO.PLUMB_EVENTS", true),
			pub(event, false),
			pub("$JS.API.CONSUMER.DELETE.PLUMB_EVENTS.notification-controller", false),
			pub("$JS.API.CONSUMER.MSG.NEXT.PLUMB_EVENTS.notification-controller", false),
			pub("$JS.API.CONSUMER.CREATE.PLUMB_EVENTS.notification-controller", false),
			pub("$JS.API.STREAM.DELETE.PLUMB_EVENTS", false),
			sub("_INBOX.notification.>", false),
		},
		testenv.NATSAlerts: {
			pub("alerts.team-a.drift", true),
			pub(event, false),
			pub("$JS.API.INFO", false),
			pub("$JS.API.STREAM.CREATE.PLUMB_EVENTS", false),
			pub("$SYS.REQ.SERVER.PING", false),
			sub("alerts.>", false),
		},
	} {
		t.Run(user, func(t *testing.T) {
			g := NewWithT(t)
			errs := make(chan error, 100)
			auth := env.SecureNATS.Auth(user)
			opts, err := auth.ConnectOptions()
			g.Expect(err).NotTo(HaveOccurred())
			nc, err := nats.Connect(env.NATSURL, append(opts, nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { errs <- err }))...)
			g.Expect(err).NotTo(HaveOccurred())
			defer nc.Close()
			for _, c := range checks {
				op := func() error { return nc.Publish(c.subject, []byte("{}")) }
				what := "publish to " + c.subject
				if c.sub {
					op = func() error { _, err := nc.SubscribeSync(c.subject); return err }
					what = "subscribe to " + c.subject
				}
				g.Expect(permitted(t, nc, errs, op)).To(Equal(c.allowed), "%s may %s: %v", user, what, c.allowed)
			}
		})
	}
}

// permitted runs op and then publishes to a subject no user may publish
// to: the server answers a refused operation with an error before the
// error about that sentinel, so the first error says whether op was
// refused.
func permitted(t *testing.T, nc *nats.Conn, errs chan error, op func() error) bool {
	t.Helper()
	const sentinel = "plumb.sentinel"
	if err := op(); err != nil {
		t.Fatal(err)
	}
	if err := nc.Publish(sentinel, nil); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	next := func() error {
		select {
		case err := <-errs:
			return err
		case <-time.After(10 * time.Second):
			t.Fatal("the server did not refuse the sentinel publish")
			return nil
		}
	}
	first := next()
	if strings.Contains(first.Error(), sentinel) {
		return true
	}
	g := NewWithT(t)
	g.Expect(IsRefused(first)).To(BeTrue(), fmt.Sprint(first))
	g.Expect(next()).To(MatchError(ContainSubstring(sentinel)))
	return false
}

func closeNow(p *JetStreamPublisher) {
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_ = p.Close(ctx)
}

// TestRedactURLHidesCredentialsInEveryURLOfACluster: logs and readiness
// name each server of a --nats-url list, without a password or token.
func TestRedactURLHidesCredentialsInEveryURLOfACluster(t *testing.T) {
	g := NewWithT(t)
	g.Expect(redactURL("nats://nats:4222")).To(Equal("nats://nats:4222"))
	g.Expect(redactURL("nats://u:secret@nats-0:4222, nats://token@nats-1:4222,nats://nats-2:4222")).To(
		Equal("nats://redacted@nats-0:4222,nats://redacted@nats-1:4222,nats://nats-2:4222"))
	g.Expect(redactURL("nats://u:secret@nats-0:4222,%zz")).To(Equal("nats://redacted@nats-0:4222,(an unparsable URL)"))
}
