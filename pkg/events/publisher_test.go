package events

import (
	"context"
	"fmt"
	"net"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"

	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/options"
	"plumb.dev/pkg/testenv"
)

// The environment starts with the first test that needs it, so the fuzz
// tests of this package (whose workers run TestMain too) start nothing. Its
// NATS server runs as deploy/ runs it: TLS with client certificates, and
// only the users of deploy/nats/accounts.conf with their permissions.
var (
	shared = testenv.Lazy{Options: []testenv.Option{testenv.WithSecureNATS()}}
	env    *testenv.Environment
)

func environment(t testing.TB) *testenv.Environment {
	t.Helper()
	env = shared.Get(t)
	return env
}

func TestMain(m *testing.M) {
	code := m.Run()
	shared.Stop()
	os.Exit(code)
}

func natsOptions(url string) options.NATS {
	return options.NATS{
		URL:            url,
		Stream:         "PLUMB_EVENTS",
		StreamMaxAge:   time.Hour,
		StreamMaxBytes: 64 << 20,
		QueueSize:      1000,
	}
}

// envOptions returns the options of a publisher of env's NATS, as the
// controllers' user.
func envOptions(env *testenv.Environment) options.NATS {
	o := natsOptions(env.NATSURL)
	o.Auth = env.SecureNATS.Auth(testenv.NATSPublisher)
	return o
}

// connect connects to env's NATS as user.
func connect(t *testing.T, env *testenv.Environment, user string) *nats.Conn {
	t.Helper()
	auth := env.SecureNATS.Auth(user)
	opts, err := auth.ConnectOptions()
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(env.NATSURL, opts...)
	if err != nil {
		t.Fatalf("connecting as %s: %v", user, err)
	}
	return nc
}

// testEvent returns an event about a GitRepository of the given name; the
// name keeps each test's events apart in the shared stream.
func testEvent(name string, i int) Event {
	return Event{
		SchemaVersion:       SchemaVersion,
		ID:                  NewID(),
		InvolvedObject:      ObjectReference{APIVersion: "source.plumb.dev/v1", Kind: "GitRepository", Namespace: "default", Name: name},
		Severity:            SeverityInfo,
		Reason:              sourcev1.NewArtifactReason,
		Message:             fmt.Sprintf("event %d", i),
		Timestamp:           time.Now().UTC(),
		ReportingController: "test",
	}
}

// stored reads every event stored for the named GitRepository, in stream
// order, waiting up to a bounded time for want of them.
func stored(ctx context.Context, t *testing.T, name string, want int) []Event {
	t.Helper()
	g := NewWithT(t)
	nc := connect(t, env, testenv.NATSReader)
	defer nc.Close()
	js, err := jetstream.New(nc)
	g.Expect(err).NotTo(HaveOccurred())
	subject := Subject("GitRepository", "default", name)
	g.Eventually(func(g Gomega) {
		s, err := js.Stream(ctx, "PLUMB_EVENTS")
		g.Expect(err).NotTo(HaveOccurred())
		info, err := s.Info(ctx, jetstream.WithSubjectFilter(subject))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(info.State.Subjects[subject]).To(BeNumerically(">=", want))
	}, time.Minute, 100*time.Millisecond).Should(Succeed())

	cons, err := js.OrderedConsumer(ctx, "PLUMB_EVENTS", jetstream.OrderedConsumerConfig{FilterSubjects: []string{subject}})
	g.Expect(err).NotTo(HaveOccurred())
	var out []Event
	for len(out) < want {
		batch, err := cons.Fetch(want-len(out), jetstream.FetchMaxWait(5*time.Second))
		g.Expect(err).NotTo(HaveOccurred())
		n := 0
		for msg := range batch.Messages() {
			e, err := Decode(msg.Data())
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(msg.Headers().Get(jetstream.MsgIDHeader)).To(Equal(e.ID))
			out = append(out, *e)
			n++
		}
		g.Expect(batch.Error()).NotTo(HaveOccurred())
		g.Expect(n).To(BeNumerically(">", 0), "the stream holds fewer events than expected")
	}
	// Nothing more than want: a duplicate would show up here.
	info, err := js.Stream(ctx, "PLUMB_EVENTS")
	g.Expect(err).NotTo(HaveOccurred())
	si, err := info.Info(ctx, jetstream.WithSubjectFilter(subject))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(si.State.Subjects[subject]).To(Equal(uint64(want)), "events stored for %s", subject)
	return out
}

func messages(events []Event) []string {
	out := make([]string, len(events))
	for i, e := range events {
		out[i] = e.Message
	}
	return out
}

// TestPublishSurvivesNATSOutage stops NATS for the duration of 50 publishes
// and starts it again on the same port: all 50 are stored exactly once, in
// the order they were published, and Publish never blocked meanwhile.
func TestPublishSurvivesNATSOutage(t *testing.T) {
	env := environment(t)
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	p, err := NewJetStreamPublisher(envOptions(env), "test", testr.New(t))
	g.Expect(err).NotTo(HaveOccurred())
	defer p.Close(ctx)

	// The stream exists and the connection works before the outage.
	p.Publish(testEvent("outage", 0))
	g.Expect(stored(ctx, t, "outage", 1)).To(HaveLen(1))

	env.StopNATS()
	want := []string{"event 0"}
	for i := 1; i <= 50; i++ {
		p.Publish(testEvent("outage", i))
		want = append(want, fmt.Sprintf("event %d", i))
	}
	g.Expect(p.Len()).To(BeNumerically(">", 0), "events wait in the queue while NATS is down")
	g.Expect(env.RestartNATS()).To(Succeed())

	g.Eventually(p.Len, time.Minute, 100*time.Millisecond).Should(BeZero())
	got := stored(ctx, t, "outage", 51)
	g.Expect(messages(got)).To(Equal(want))
	g.Expect(p.Close(ctx)).To(Succeed())
}

// TestPublishDeduplicatesByID publishes the same event twice, as a retry
// after a lost acknowledgement would: JetStream stores it once.
func TestPublishDeduplicatesByID(t *testing.T) {
	env := environment(t)
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := NewJetStreamPublisher(envOptions(env), "test", logr.Discard())
	g.Expect(err).NotTo(HaveOccurred())
	e := testEvent("dedup", 1)
	p.Publish(e)
	p.Publish(e)
	p.Publish(testEvent("dedup", 2))
	g.Expect(p.Close(ctx)).To(Succeed())
	g.Expect(messages(stored(ctx, t, "dedup", 2))).To(Equal([]string{"event 1", "event 2"}))
}

// TestCloseFlushesQueue publishes and closes at once: Close waits until
// every queued event is stored.
func TestCloseFlushesQueue(t *testing.T) {
	env := environment(t)
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := NewJetStreamPublisher(envOptions(env), "test", logr.Discard())
	g.Expect(err).NotTo(HaveOccurred())
	var want []string
	for i := range 20 {
		p.Publish(testEvent("flush", i))
		want = append(want, fmt.Sprintf("event %d", i))
	}
	g.Expect(p.Close(ctx)).To(Succeed())
	g.Expect(p.Len()).To(BeZero())
	g.Expect(messages(stored(ctx, t, "flush", 20))).To(Equal(want))

	// After Close, Publish drops and counts instead of queueing.
	before := testutil.ToFloat64(eventsDropped.WithLabelValues("test"))
	p.Publish(testEvent("flush", 99))
	g.Expect(p.Len()).To(BeZero())
	g.Expect(testutil.ToFloat64(eventsDropped.WithLabelValues("test"))).To(Equal(before + 1))
}

// TestQueueDropsOldestWhenFull publishes more events than the queue holds
// while NATS is unreachable: the oldest go, the drops are counted, and Close
// says how many events it could not send.
func TestQueueDropsOldestWhenFull(t *testing.T) {
	g := NewWithT(t)
	opts := natsOptions("nats://" + closedAddr(t))
	opts.QueueSize = 5
	p, err := NewJetStreamPublisher(opts, "queue-test", logr.Discard())
	g.Expect(err).NotTo(HaveOccurred())

	for i := range 8 {
		p.Publish(testEvent("full", i))
	}
	g.Expect(testutil.ToFloat64(eventsDropped.WithLabelValues("queue-test"))).To(Equal(3.0))
	g.Expect(testutil.ToFloat64(queueLength.WithLabelValues("queue-test"))).To(Equal(5.0))
	p.mu.Lock()
	var kept []string
	for _, q := range p.queue {
		e, err := Decode(q.data)
		g.Expect(err).NotTo(HaveOccurred())
		kept = append(kept, e.Message)
	}
	p.mu.Unlock()
	g.Expect(kept).To(Equal([]string{"event 3", "event 4", "event 5", "event 6", "event 7"}))

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err = p.Close(ctx)
	g.Expect(err).To(MatchError(ContainSubstring("5 events not published")))
	g.Expect(testutil.ToFloat64(eventsDropped.WithLabelValues("queue-test"))).To(Equal(8.0))
}

// TestEnsureStreamIsIdempotent creates the stream twice with the same
// options and then updates its limits, as controllers starting in any order
// and with changed flags do.
func TestEnsureStreamIsIdempotent(t *testing.T) {
	env := environment(t)
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// As the controllers' user, which may create and update the stream
	// but not read it: the answer to the update says what it holds.
	nc := connect(t, env, testenv.NATSPublisher)
	defer nc.Close()
	js, err := jetstream.New(nc)
	g.Expect(err).NotTo(HaveOccurred())

	opts := envOptions(env)
	for range 2 {
		s, err := EnsureStream(ctx, js, opts)
		g.Expect(err).NotTo(HaveOccurred())
		info := s.CachedInfo()
		g.Expect(info.Config.Subjects).To(Equal([]string{"plumb.events.>"}))
		g.Expect(info.Config.MaxAge).To(Equal(time.Hour))
		g.Expect(info.Config.Duplicates).To(Equal(DuplicateWindow))
	}
	opts.StreamMaxAge = 2 * time.Hour
	opts.StreamMaxBytes = 128 << 20
	s, err := EnsureStream(ctx, js, opts)
	g.Expect(err).NotTo(HaveOccurred())
	info := s.CachedInfo()
	g.Expect(info.Config.MaxAge).To(Equal(2 * time.Hour))
	g.Expect(info.Config.MaxBytes).To(Equal(int64(128 << 20)))
	// Put the shared limits back for the other tests.
	_, err = EnsureStream(ctx, js, envOptions(env))
	g.Expect(err).NotTo(HaveOccurred())
}

func TestNewJetStreamPublisherRejectsBadOptions(t *testing.T) {
	for name, opts := range map[string]options.NATS{
		"no URL":     {Stream: "S", QueueSize: 1},
		"no stream":  {URL: "nats://127.0.0.1:1", QueueSize: 1},
		"zero queue": {URL: "nats://127.0.0.1:1", Stream: "S"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := NewJetStreamPublisher(opts, "test", logr.Discard())
			NewWithT(t).Expect(err).To(HaveOccurred())
		})
	}
	p, err := NewPublisher(options.NATS{}, "test", logr.Discard())
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	NewWithT(t).Expect(p).To(Equal(NopPublisher{}))
}

// closedAddr returns a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}
