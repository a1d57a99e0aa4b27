package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	. "github.com/onsi/gomega"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	notificationv1 "plumb.dev/api/notification/v1"
	"plumb.dev/notification-controller/internal/config"
	"plumb.dev/pkg/app"
	"plumb.dev/pkg/events"
)

// TestRepeatedNewsIsAlertedOncePerInterval: a health check that flaps
// (HealthDegraded, HealthRecovered, HealthDegraded, … of one Kustomization)
// and a failure retried with a different back-off figure each time go
// through the dispatcher's routing, provider queue and notifier to a
// stand-in on 127.0.0.1. Each distinct news is delivered once per
// --rate-limit-interval: the first Degraded and the first Recovered at
// once, their repeats not until the interval has passed, a new revision's
// failure at once. Deduplication comes before the provider, so it holds for
// every provider type; the table runs it against a stand-in of each HTTP
// type.
func TestRepeatedNewsIsAlertedOncePerInterval(t *testing.T) {
	for _, typ := range []string{
		notificationv1.GenericProvider,
		notificationv1.GenericHMACProvider,
		notificationv1.SlackProvider,
		notificationv1.DiscordProvider,
		notificationv1.MSTeamsProvider,
	} {
		t.Run(typ, func(t *testing.T) {
			g := NewWithT(t)
			standIn := &standIn{}
			srv := httptest.NewServer(standIn)
			t.Cleanup(srv.Close)
			d, now := newTestDispatcher(t, typ, srv.URL)

			degraded := func(rev, backOff string) *events.Event {
				e := kustomizationEvent(events.SeverityError, kustomizev1.HealthDegradedReason,
					"Pod/apps/worker is Degraded: container worker: CrashLoopBackOff", rev)
				e.Metadata = map[string]string{events.VolatilePrefix + "detail": "back-off " + backOff + " restarting failed container"}
				return e
			}
			recovered := func(rev string) *events.Event {
				return kustomizationEvent(events.SeverityInfo, kustomizev1.HealthRecoveredReason, "all objects are healthy", rev)
			}
			const rev1, rev2 = "main@sha1:1111111", "main@sha1:2222222"

			// Flapping every ten seconds for just under the interval
			// (5m), the back-off figure growing each time.
			backOffs := []string{"10s", "20s", "40s", "1m20s", "2m40s", "5m0s"}
			for i := range 15 {
				d.send(t, degraded(rev1, backOffs[min(i, len(backOffs)-1)]))
				now.add(10 * time.Second)
				d.send(t, recovered(rev1))
				now.add(10 * time.Second)
				if i == 3 {
					// New news in the middle of the flapping.
					d.send(t, degraded(rev2, "10s"))
				}
			}
			g.Expect(standIn.received()).To(Equal([]string{"HealthDegraded " + rev1, "HealthRecovered " + rev1, "HealthDegraded " + rev2}),
				"within the interval, each news once")

			// 5m after the first delivery of each, their repeats go out
			// once more.
			now.set(5 * time.Minute)
			d.send(t, degraded(rev1, "5m0s"))
			d.send(t, degraded(rev1, "5m0s"))
			now.set(5*time.Minute + 10*time.Second)
			d.send(t, recovered(rev1))
			d.send(t, recovered(rev1))
			g.Expect(standIn.received()).To(Equal([]string{
				"HealthDegraded " + rev1, "HealthRecovered " + rev1, "HealthDegraded " + rev2,
				"HealthDegraded " + rev1, "HealthRecovered " + rev1,
			}), "after the interval, each news once more")
			g.Expect(standIn.bodies()[0]).To(ContainSubstring("back-off 10s"), "volatile details are shown, only not compared")
		})
	}
}

// TestAnEventDeliveredAgainIsNotSentTwice: JetStream delivers an event
// again when its acknowledgement was lost, e.g. with the NATS server that
// held the consumer. The provider took it the first time, so the
// dispatcher acknowledges it without sending it again, with rate limiting
// off too; a new event with the same news is still sent.
func TestAnEventDeliveredAgainIsNotSentTwice(t *testing.T) {
	g := NewWithT(t)
	standIn := &standIn{}
	srv := httptest.NewServer(standIn)
	t.Cleanup(srv.Close)
	d, _ := newTestDispatcher(t, notificationv1.GenericProvider, srv.URL, "--rate-limit-interval=0")

	e := kustomizationEvent(events.SeverityError, kustomizev1.HealthDegradedReason, "Deployment/apps/web is Degraded", "main@sha1:1111111")
	d.send(t, e)
	d.send(t, e) // delivered again: the same id
	g.Expect(standIn.bodies()).To(HaveLen(1), "the provider took it once")

	again := *e
	again.ID = events.NewID()
	d.send(t, &again)
	g.Expect(standIn.bodies()).To(HaveLen(2), "another event with the same news is sent: rate limiting is off")
}

// testDispatcher runs the dispatcher's routing and delivery (route, the
// provider queues, deliver, the notifier) without the NATS consumer: each
// event is handed to route as the consumer would, in a message that
// records its acknowledgement.
type testDispatcher struct {
	*Dispatcher
	ctx context.Context
}

// testClock is the rate limiter's clock, moved by the test only.
type testClock struct {
	mu    sync.Mutex
	start time.Time
	at    time.Time
}

func (c *testClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.at
}

func (c *testClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.at = c.at.Add(d)
}

// set moves the clock to d after the start.
func (c *testClock) set(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.at = c.start.Add(d)
}

// newTestDispatcher returns a dispatcher with the flags' defaults (a 5m
// rate-limit interval), loopback addresses allowed, one Provider of the
// given type at address and one Alert on Kustomization apps/app; args are
// more flags, which win over those.
func newTestDispatcher(t *testing.T, typ, address string, args ...string) (*testDispatcher, *testClock) {
	t.Helper()
	var o config.Notification
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	o.BindFlags(fs)
	if err := fs.Parse(append([]string{"--allow-loopback-provider-addresses", "--rate-limit-interval=5m", "--delivery-retries=0"}, args...)); err != nil {
		t.Fatal(err)
	}
	provider := &notificationv1.Provider{
		ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "team", UID: "provider-uid"},
		Spec:       notificationv1.ProviderSpec{Type: typ, Address: address, Channel: "alerts", Insecure: true},
	}
	objs := []client.Object{provider, &notificationv1.Alert{
		ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "team"},
		Spec: notificationv1.AlertSpec{
			ProviderRef:   meta.LocalObjectReference{Name: "team"},
			EventSeverity: "info",
			EventSources:  []notificationv1.CrossNamespaceObjectReference{{Kind: "Kustomization", Name: "app"}},
		},
	}}
	if typ == notificationv1.GenericHMACProvider || typ == notificationv1.GitHubProvider {
		// Types that need a token get a Secret with one.
		provider.Spec.SecretRef = &meta.LocalObjectReference{Name: "team-hmac"}
		objs = append(objs, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "team-hmac"},
			Data:       map[string][]byte{"token": []byte("signing-key")},
		})
	}
	c := fake.NewClientBuilder().WithScheme(app.NewScheme()).WithObjects(objs...).Build()
	clock := &testClock{start: time.Unix(1_000_000, 0)}
	clock.at = clock.start
	d := &Dispatcher{Options: o, Client: c, Reader: c, Log: testr.New(t), now: clock.now}
	if err := d.setup(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() {
		cancel()
		d.queues.wait()
	})
	return &testDispatcher{Dispatcher: d, ctx: ctx}, clock
}

// send routes one event and waits until it is acknowledged: delivered,
// rate-limited or given up.
func (d *testDispatcher) send(t *testing.T, e *events.Event) {
	t.Helper()
	data, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	msg := &testMsg{subject: e.Subject(), data: data, acked: make(chan struct{})}
	d.route(d.ctx, msg)
	select {
	case <-msg.acked:
	case <-time.After(30 * time.Second):
		t.Fatalf("event %s %s was not acknowledged", e.Reason, e.Revision)
	}
}

func kustomizationEvent(sev events.Severity, reason, message, revision string) *events.Event {
	return &events.Event{
		SchemaVersion:       events.SchemaVersion,
		ID:                  events.NewID(),
		InvolvedObject:      events.ObjectReference{APIVersion: "kustomize.plumb.dev/v1", Kind: "Kustomization", Namespace: "apps", Name: "app"},
		Severity:            sev,
		Reason:              reason,
		Message:             message,
		Revision:            revision,
		Timestamp:           time.Now().UTC(),
		ReportingController: "sync-controller",
	}
}

// standIn is a provider endpoint that keeps what it receives.
type standIn struct {
	// took, when set, is called with the number of deliveries received
	// so far, after each, before the provider answers.
	took func(n int)

	mu   sync.Mutex
	body []string
}

func (s *standIn) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.body = append(s.body, string(b))
	n := len(s.body)
	s.mu.Unlock()
	if s.took != nil {
		s.took(n)
	}
	w.WriteHeader(http.StatusOK)
}

func (s *standIn) bodies() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.body...)
}

// received names each delivery by the reason and revision its body holds
// (every provider type's payload carries both).
func (s *standIn) received() []string {
	var out []string
	for _, b := range s.bodies() {
		name := "?"
		for _, reason := range []string{kustomizev1.HealthDegradedReason, kustomizev1.HealthRecoveredReason} {
			for _, rev := range []string{"main@sha1:1111111", "main@sha1:2222222"} {
				if strings.Contains(b, reason) && strings.Contains(b, rev) {
					name = reason + " " + rev
				}
			}
		}
		out = append(out, name)
	}
	return out
}

// testMsg is a JetStream message that closes acked when acknowledged.
type testMsg struct {
	subject string
	data    []byte
	acked   chan struct{}
	once    sync.Once
}

var errNotInTest = errors.New("not used by the dispatcher on this path")

func (m *testMsg) Metadata() (*jetstream.MsgMetadata, error) { return nil, errNotInTest }
func (m *testMsg) Data() []byte                              { return m.data }
func (m *testMsg) Headers() nats.Header                      { return nil }
func (m *testMsg) Subject() string                           { return m.subject }
func (m *testMsg) Reply() string                             { return "" }
func (m *testMsg) Ack() error                                { m.ack(); return nil }
func (m *testMsg) DoubleAck(context.Context) error           { m.ack(); return nil }
func (m *testMsg) Nak() error                                { return errNotInTest }
func (m *testMsg) NakWithDelay(time.Duration) error          { return errNotInTest }
func (m *testMsg) InProgress() error                         { return nil }
func (m *testMsg) Term() error                               { return errNotInTest }
func (m *testMsg) TermWithReason(string) error               { return errNotInTest }
func (m *testMsg) ack()                                      { m.once.Do(func() { close(m.acked) }) }
