package dispatch

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/nats-io/nats.go/jetstream"
	"sigs.k8s.io/controller-runtime/pkg/client"

	notificationv1 "plumb.dev/api/notification/v1"
	"plumb.dev/notification-controller/internal/config"
	"plumb.dev/notification-controller/internal/notifier"
	"plumb.dev/pkg/events"
	"plumb.dev/pkg/kinds"
	"plumb.dev/pkg/options"
	"plumb.dev/pkg/panics"
)

// ControllerName is the reportingController of events this controller
// publishes.
const ControllerName = kinds.NotificationController

// Dispatcher consumes the events stream and delivers alerts. It is a
// controller-runtime Runnable that runs on the leader only, so one process
// delivers and events about one object stay in order.
//
// It joins three parts, each knowing nothing of the others: the stream
// (consume.go: the JetStream consumer and the fate of each event), the
// configuration (configs.go: the Alerts an event matches, the notifier of
// a Provider) and the delivery to providers (deliver.go, queue.go,
// ratelimit.go: per-Provider queues, retries, the rate limit and the
// memory of what was delivered). What it does itself is routing: an event
// from the stream, matched against the configuration, becomes deliveries
// on the queues, and is settled on the stream when the last is done.
type Dispatcher struct {
	NATS    options.NATS
	Options config.Notification
	// Metrics records delivery metrics (NewMetrics); nil records none.
	Metrics *Metrics
	// FilterSubjects narrows the consumer; all events when empty.
	FilterSubjects []string
	// Client reads Alerts and Providers (from the manager's cache).
	Client client.Client
	// Reader reads Secrets and the labels of involved objects, uncached.
	Reader client.Reader
	// Events records Warning events on Alerts whose provider gave up.
	Events *events.Recorder
	// HTTPClient sends webhook deliveries; when nil, one from
	// notifier.NewHTTPClient with the Options' address policy and
	// --max-provider-timeout.
	HTTPClient *http.Client
	Log        logr.Logger

	stream  stream
	configs configs

	// now is the clock of limiter and delivered; time.Now when nil (tests
	// set it).
	now     func() time.Time
	limiter *recent
	// delivered remembers the events each alert's provider took, by event
	// id, for deliveredWindow.
	delivered *recent
	queues    providerQueues
}

// Check is a readiness check: it fails while the NATS server refuses the
// consumer (credentials, permissions, TLS), and passes before Start and on
// a replica that is not the leader.
func (d *Dispatcher) Check(r *http.Request) error { return d.stream.check(r) }

// NeedLeaderElection makes only the leader consume.
func (d *Dispatcher) NeedLeaderElection() bool { return true }

// Start consumes until ctx ends, then finishes or hands back what it holds.
func (d *Dispatcher) Start(ctx context.Context) error {
	if err := d.setup(); err != nil {
		return err
	}
	log := d.Log.WithValues("consumer", d.Options.ConsumerName)

	nc, err := events.Connect(d.NATS, ControllerName, log)
	if err != nil {
		return fmt.Errorf("consuming events: %w", err)
	}
	d.stream.conn.Store(nc)
	defer nc.Close()
	js, err := jetstream.New(nc.Conn)
	if err != nil {
		return err
	}

	// One channel per worker; the subject picks the worker.
	workers := make([]chan jetstream.Msg, d.Options.Workers)
	var wg sync.WaitGroup
	for i := range workers {
		workers[i] = make(chan jetstream.Msg, fetchBatch)
		wg.Go(func() { d.work(ctx, workers[i]) })
	}
	wg.Go(func() { d.stream.keepAlive(ctx) })

	log.Info("consuming events", "stream", d.NATS.Stream, "subjects", d.FilterSubjects)
	d.stream.consume(ctx, js, workers)
	for _, w := range workers {
		close(w)
	}
	wg.Wait()
	// No event is routed any more: the provider queues drain (what they
	// still hold is handed back) and stop.
	d.queues.wait()
	d.stream.handBackAll()
	return nil
}

// setup validates the options and makes what routing and delivery use.
func (d *Dispatcher) setup() error {
	if err := d.Options.Validate(); err != nil {
		return err
	}
	policy := notifier.AddressPolicy{AllowPrivate: d.Options.AllowPrivateAddresses, AllowLoopback: d.Options.AllowLoopbackAddresses}
	if d.HTTPClient == nil {
		d.HTTPClient = notifier.NewHTTPClient(policy, d.Options.MaxProviderTimeout)
	}
	if len(d.FilterSubjects) == 0 {
		d.FilterSubjects = []string{events.StreamSubjects}
	}
	d.stream.nats = d.NATS
	d.stream.consumerName = d.Options.ConsumerName
	d.stream.ackWait = d.Options.AckWait
	d.stream.subjects = d.FilterSubjects
	d.stream.log = d.Log
	d.stream.inflight = map[jetstream.Msg]struct{}{}
	d.configs.cache = d.Client
	d.configs.api = d.Reader
	d.configs.matcher = Matcher{NoCrossNamespaceRefs: d.Options.NoCrossNamespaceRefs}
	d.configs.httpClient = d.HTTPClient
	d.configs.policy = policy
	d.configs.threads = notifier.NewThreadStore()
	d.limiter = newRecent(d.Options.RateLimitInterval, maxRecent, d.now)
	d.delivered = newRecent(deliveredWindow(d.Options.AckWait), maxRecent, d.now)
	return nil
}

// work routes one worker's events in order to the provider queues. After
// ctx ends it sets the events it has not routed aside, to be handed back
// for the next instance.
func (d *Dispatcher) work(ctx context.Context, in <-chan jetstream.Msg) {
	for msg := range in {
		if ctx.Err() != nil {
			d.stream.setAside(msg)
			continue
		}
		d.route(ctx, msg)
	}
}

// route matches one event against the Alerts and puts one delivery per
// matching Alert on its Provider's queue; the event is acknowledged when
// the last of them is done (see pending). An event no Alert wants is
// acknowledged at once, an invalid one terminated.
func (d *Dispatcher) route(ctx context.Context, msg jetstream.Msg) {
	e, alerts, o := d.match(ctx, msg)
	if len(alerts) == 0 {
		d.stream.settle(msg, o)
		return
	}
	p := &pending{msg: msg, left: len(alerts)}
	for i := range alerts {
		d.queues.push(ctx, d, delivery{pending: p, alert: alerts[i], event: e})
	}
}

// match decodes an event and finds the Alerts that want it; with none, o
// says what becomes of the event. A panic (the event is untrusted input)
// is reported and the event terminated, so it is not delivered again to
// panic again.
func (d *Dispatcher) match(ctx context.Context, msg jetstream.Msg) (e *events.Event, alerts []notificationv1.Alert, o outcome) {
	var panicked error
	defer func() {
		if panicked != nil {
			e, alerts, o = nil, nil, outcome{term: true}
		}
	}()
	defer panics.Recover(&panicked, "event match")
	e, err := events.Decode(msg.Data())
	if err != nil {
		d.Metrics.received(false)
		d.Log.Info("dropping an invalid event", "subject", msg.Subject(), "error", err.Error())
		// Terminate rather than ack: the server records it was not processed.
		return nil, nil, outcome{term: true}
	}
	d.Metrics.received(true)
	if e.ReportingController == ControllerName && (e.InvolvedObject.Kind == notificationv1.AlertKind || e.InvolvedObject.Kind == notificationv1.ProviderKind) {
		return e, nil, outcome{ack: true}
	}
	// An event whose handling began is matched even when shutdown begins
	// meanwhile.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), readTimeout)
	defer cancel()
	alerts, err = d.configs.alertsFor(rctx, e)
	if err != nil {
		// The cache or API server failing is temporary: hand the event back
		// after a pause rather than lose it.
		d.Log.Error(err, "matching an event against alerts", "event", e.ID)
		return e, nil, outcome{delay: 5 * time.Second}
	}
	return e, alerts, outcome{ack: true}
}
