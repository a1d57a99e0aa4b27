package dispatch

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"
	natsserver "github.com/nats-io/nats-server/v2/server"
	. "github.com/onsi/gomega"
	"github.com/spf13/pflag"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/notification-controller/internal/config"
	"plumb.dev/pkg/app"
	"plumb.dev/pkg/events"
	"plumb.dev/pkg/options"
	"plumb.dev/pkg/testenv"
)

// The consumer's tests run against a NATS server with deploy/'s users,
// TLS and client certificates; it starts with the first test that needs it.
var (
	shared = testenv.Lazy{Options: []testenv.Option{testenv.WithSecureNATS()}}
	env    *testenv.Environment
)

func environment(t *testing.T) *testenv.Environment {
	t.Helper()
	env = shared.Get(t)
	return env
}

func TestMain(m *testing.M) {
	code := m.Run()
	shared.Stop()
	os.Exit(code)
}

// startDispatcher runs a Dispatcher with the flags' defaults, no Alerts and
// the given NATS authentication until the test ends.
func startDispatcher(t *testing.T, auth options.NATSAuth) *Dispatcher {
	t.Helper()
	var o config.Notification
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	o.BindFlags(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(app.NewScheme()).Build()
	d := &Dispatcher{
		NATS:    options.NATS{URL: env.NATSURL, Stream: "PLUMB_EVENTS", StreamMaxAge: time.Hour, StreamMaxBytes: 64 << 20, QueueSize: 100, Auth: auth},
		Options: o,
		Client:  c,
		Reader:  c,
		Log:     testr.New(t),
	}
	runDispatcher(t, d)
	return d
}

// TestAConsumerWithoutCredentialsIsRefusedAndSaysSo: notification-
// controller's consumer without a user fails its readiness check with the
// server's reason.
func TestAConsumerWithoutCredentialsIsRefusedAndSaysSo(t *testing.T) {
	env := environment(t)
	d := startDispatcher(t, env.SecureNATS.TLSOnly())
	NewWithT(t).Eventually(func() error { return d.Check(nil) }, 20*time.Second, 50*time.Millisecond).Should(
		MatchError(And(ContainSubstring("refused this client"), ContainSubstring("Authorization Violation"))))
}

// TestAConsumerWithItsCredentialsConsumes: as the notification user of
// deploy/nats/accounts.conf, the consumer creates its durable consumer,
// pulls the events controllers publish and acknowledges them.
func TestAConsumerWithItsCredentialsConsumes(t *testing.T) {
	env := environment(t)
	g := NewWithT(t)
	d := startDispatcher(t, env.SecureNATS.Auth(testenv.NATSNotification))

	p, err := events.NewJetStreamPublisher(options.NATS{URL: env.NATSURL, Stream: "PLUMB_EVENTS", StreamMaxAge: time.Hour,
		StreamMaxBytes: 64 << 20, QueueSize: 100, Auth: env.SecureNATS.Auth(testenv.NATSPublisher)}, "source-controller", logr.Discard())
	g.Expect(err).NotTo(HaveOccurred())
	// The consumer delivers new events only: publish once it exists.
	g.Eventually(func() int { return len(consumers(t)) }, 20*time.Second, 50*time.Millisecond).Should(Equal(1))
	for i := range 3 {
		p.Publish(events.Event{
			SchemaVersion:       events.SchemaVersion,
			ID:                  events.NewID(),
			InvolvedObject:      events.ObjectReference{APIVersion: "source.plumb.dev/v1", Kind: "GitRepository", Namespace: "default", Name: "app"},
			Severity:            events.SeverityInfo,
			Reason:              sourcev1.NewArtifactReason,
			Message:             fmt.Sprintf("event %d", i),
			Timestamp:           time.Now().UTC(),
			ReportingController: "source-controller",
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	g.Expect(p.Close(ctx)).To(Succeed())

	g.Eventually(func(g Gomega) {
		cs := consumers(t)
		g.Expect(cs).To(HaveLen(1))
		g.Expect(cs[0].Name).To(Equal("notification-controller"))
		g.Expect(cs[0].AckFloor.Stream).To(BeNumerically(">=", 3), "every event acknowledged")
		g.Expect(cs[0].NumAckPending).To(BeZero())
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	g.Expect(d.Check(nil)).To(Succeed())
}

// consumers returns the consumers of the events stream, as the server
// sees them.
func consumers(t *testing.T) []*natsserver.ConsumerInfo {
	t.Helper()
	info, err := env.NATS.Jsz(&natsserver.JSzOptions{Accounts: true, Streams: true, Consumer: true})
	if err != nil {
		t.Fatal(err)
	}
	var out []*natsserver.ConsumerInfo
	for _, a := range info.AccountDetails {
		for _, s := range a.Streams {
			if s.Name == "PLUMB_EVENTS" {
				out = append(out, s.Consumer...)
			}
		}
	}
	return out
}
