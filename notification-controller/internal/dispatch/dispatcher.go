package dispatch

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"math"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	notificationv1 "plumb.dev/api/notification/v1"
	"plumb.dev/notification-controller/internal/alerttext"
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

// fetchBatch is how many events one pull asks for.
const fetchBatch = 64

// fetchWait is how long one pull waits for events; shutdown waits for the
// last pull to end.
const fetchWait = 3 * time.Second

// Dispatcher consumes the events stream and delivers alerts. It is a
// controller-runtime Runnable that runs on the leader only, so one process
// delivers and events about one object stay in order.
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

	// now is the clock of limiter and delivered; time.Now when nil (tests
	// set it).
	now     func() time.Time
	limiter *recent
	// delivered remembers the events each alert's provider took, by event
	// id, for deliveredWindow.
	delivered *recent
	configs   configCache
	// threads remembers each threading Provider's Slack threads across
	// the notifiers configs caches and rebuilds.
	threads *notifier.ThreadStore
	matcher Matcher
	policy  notifier.AddressPolicy
	queues  providerQueues

	// conn is the consumer's connection once Start made it, for Check.
	conn atomic.Pointer[events.Conn]

	mu       sync.Mutex
	inflight map[jetstream.Msg]struct{}
	// aside holds the events handed back at the end of shutdown.
	aside []jetstream.Msg
}

// Check is a readiness check: it fails while the NATS server refuses the
// consumer (credentials, permissions, TLS), and passes before Start and on
// a replica that is not the leader.
func (d *Dispatcher) Check(r *http.Request) error {
	if c := d.conn.Load(); c != nil {
		return c.Check(r)
	}
	return nil
}

// ok tells the connection that the server took a request, which ends a
// refused permission.
func (d *Dispatcher) ok() {
	if c := d.conn.Load(); c != nil {
		c.OK()
	}
}

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
	d.conn.Store(nc)
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
	wg.Go(func() { d.keepAlive(ctx) })

	log.Info("consuming events", "stream", d.NATS.Stream, "subjects", d.FilterSubjects)
	d.consume(ctx, js, workers, log)
	for _, w := range workers {
		close(w)
	}
	wg.Wait()
	// No event is routed any more: the provider queues drain (what they
	// still hold is handed back) and stop.
	d.queues.wait()
	d.handBackAll()
	return nil
}

// setup validates the options and makes what routing and delivery use.
func (d *Dispatcher) setup() error {
	if err := d.Options.Validate(); err != nil {
		return err
	}
	d.policy = notifier.AddressPolicy{AllowPrivate: d.Options.AllowPrivateAddresses, AllowLoopback: d.Options.AllowLoopbackAddresses}
	if d.HTTPClient == nil {
		d.HTTPClient = notifier.NewHTTPClient(d.policy, d.Options.MaxProviderTimeout)
	}
	d.matcher = Matcher{NoCrossNamespaceRefs: d.Options.NoCrossNamespaceRefs}
	if len(d.FilterSubjects) == 0 {
		d.FilterSubjects = []string{events.StreamSubjects}
	}
	d.limiter = newRecent(d.Options.RateLimitInterval, maxRecent, d.now)
	d.delivered = newRecent(deliveredWindow(d.Options.AckWait), maxRecent, d.now)
	d.threads = notifier.NewThreadStore()
	d.inflight = map[jetstream.Msg]struct{}{}
	return nil
}

// setAside keeps an event this instance will not deliver, to hand back at
// the end of shutdown.
func (d *Dispatcher) setAside(msg jetstream.Msg) {
	d.mu.Lock()
	d.aside = append(d.aside, msg)
	d.mu.Unlock()
}

// handBackAll negatively acknowledges the events set aside, in stream
// order, so the next instance gets them at once and in order (JetStream
// redelivers before it delivers new events).
func (d *Dispatcher) handBackAll() {
	d.mu.Lock()
	aside := d.aside
	d.aside = nil
	d.mu.Unlock()
	seq := func(m jetstream.Msg) uint64 {
		if md, err := m.Metadata(); err == nil {
			return md.Sequence.Stream
		}
		return 0
	}
	slices.SortStableFunc(aside, func(a, b jetstream.Msg) int { return cmp.Compare(seq(a), seq(b)) })
	for _, m := range aside {
		d.settle(m, outcome{})
	}
}

// consume pulls events and hands each to its worker until ctx ends,
// recreating the consumer after errors (NATS down, stream deleted).
func (d *Dispatcher) consume(ctx context.Context, js jetstream.JetStream, workers []chan jetstream.Msg, log logr.Logger) {
	// 200ms, doubling up to 5s while the failures last.
	initial := wait.Backoff{Duration: 200 * time.Millisecond, Factor: 2, Cap: 5 * time.Second, Steps: math.MaxInt32}
	backoff := initial
	pause := func() bool {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(backoff.Step()):
			return true
		}
	}
	var cons jetstream.Consumer
	failing := false
	for ctx.Err() == nil {
		if cons == nil {
			var err error
			if cons, err = d.consumer(ctx, js); err != nil {
				if !failing && ctx.Err() == nil {
					log.Info("cannot create the JetStream consumer, retrying", "error", err.Error())
					failing = true
				}
				cons = nil
				if !pause() {
					return
				}
				continue
			}
			d.ok()
		}
		// No context: a pull is never cut short, so when the loop ends the
		// server holds no pull request of ours. Events handed back at
		// shutdown then go straight to the redelivery queue in order; with
		// a request left behind, the server would take one, find nobody
		// listening and queue it again behind the others.
		batch, err := cons.Fetch(fetchBatch, jetstream.FetchMaxWait(fetchWait))
		if err != nil {
			if !failing && ctx.Err() == nil {
				log.Info("cannot fetch events, retrying", "error", err.Error())
				failing = true
			}
			cons = nil
			if !pause() {
				return
			}
			continue
		}
		// Range to the end even after ctx ends, and hand every event to
		// its worker even then: after ctx ends a worker sets aside what it
		// cannot deliver, behind the event it is working on. (Workers drain
		// their channels until they are closed, so this blocks for one
		// delivery attempt at most.)
		for msg := range batch.Messages() {
			d.ok()
			d.track(msg)
			workers[shard(msg.Subject(), len(workers))] <- msg
		}
		if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) && ctx.Err() == nil {
			if !failing {
				log.Info("fetching events failed, retrying", "error", err.Error())
				failing = true
			}
			cons = nil
			if !pause() {
				return
			}
			continue
		}
		if failing {
			log.Info("consuming events again")
			failing = false
		}
		backoff = initial
	}
}

// consumer creates or updates the durable consumer (and the stream, so the
// controller can start before any other).
func (d *Dispatcher) consumer(ctx context.Context, js jetstream.JetStream) (jetstream.Consumer, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := events.EnsureStream(ctx, js, d.NATS); err != nil {
		return nil, err
	}
	cfg := jetstream.ConsumerConfig{
		Durable:       d.Options.ConsumerName,
		Description:   "notification-controller: alerts from Plumb events",
		DeliverPolicy: jetstream.DeliverNewPolicy,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       d.Options.AckWait,
		MaxDeliver:    -1,
		MaxAckPending: 1000,
	}
	if len(d.FilterSubjects) == 1 {
		cfg.FilterSubject = d.FilterSubjects[0]
	} else {
		cfg.FilterSubjects = d.FilterSubjects
	}
	return js.CreateOrUpdateConsumer(ctx, d.NATS.Stream, cfg)
}

func shard(subject string, n int) int {
	h := fnv.New32a()
	h.Write([]byte(subject))
	return int(h.Sum32() % uint32(n))
}

// work routes one worker's events in order to the provider queues. After
// ctx ends it sets the events it has not routed aside, to be handed back
// for the next instance.
func (d *Dispatcher) work(ctx context.Context, in <-chan jetstream.Msg) {
	for msg := range in {
		if ctx.Err() != nil {
			d.setAside(msg)
			continue
		}
		d.route(ctx, msg)
	}
}

// keepAlive tells JetStream, every third of the ack wait, that the events
// this process holds are still being worked on, so slow deliveries and
// events queued behind them are not redelivered.
func (d *Dispatcher) keepAlive(ctx context.Context) {
	t := time.NewTicker(d.Options.AckWait / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		d.mu.Lock()
		held := make([]jetstream.Msg, 0, len(d.inflight))
		for m := range d.inflight {
			held = append(held, m)
		}
		d.mu.Unlock()
		for _, m := range held {
			_ = m.InProgress()
		}
	}
}

func (d *Dispatcher) track(msg jetstream.Msg) {
	d.mu.Lock()
	d.inflight[msg] = struct{}{}
	d.mu.Unlock()
}

// outcome says what becomes of a handled message.
type outcome struct {
	// ack: done with (delivered, given up, or not wanted).
	ack bool
	// term: never to be delivered again (invalid).
	term bool
	// delay before a redelivery, when neither ack nor term.
	delay time.Duration
}

// settle acknowledges msg, terminates it, or hands it back for redelivery.
// An acknowledgement waits for the server's confirmation and is retried
// for up to an ack wait, so "acknowledged" means the server has it.
func (d *Dispatcher) settle(msg jetstream.Msg, o outcome) {
	defer func() {
		d.mu.Lock()
		delete(d.inflight, msg)
		d.mu.Unlock()
	}()
	switch {
	case o.term:
		_ = msg.Term()
		return
	case !o.ack && o.delay > 0:
		_ = msg.NakWithDelay(o.delay)
		return
	case !o.ack:
		_ = msg.Nak()
		return
	}
	// Retry for as long as JetStream waits for the ack: 100ms, doubling up
	// to 2s.
	ctx, cancel := context.WithTimeout(context.Background(), d.Options.AckWait)
	defer cancel()
	var err error
	retry := wait.Backoff{Duration: 100 * time.Millisecond, Factor: 2, Cap: 2 * time.Second, Steps: math.MaxInt32}
	_ = retry.DelayFunc().Until(ctx, true, true, func(context.Context) (bool, error) {
		actx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err = msg.DoubleAck(actx)
		return err == nil || errors.Is(err, jetstream.ErrMsgAlreadyAckd), nil
	})
	if err != nil && !errors.Is(err, jetstream.ErrMsgAlreadyAckd) {
		d.Log.Info("could not acknowledge an event; JetStream will deliver it again", "subject", msg.Subject(), "error", err.Error())
	}
}

// route matches one event against the Alerts and puts one delivery per
// matching Alert on its Provider's queue; the event is acknowledged when
// the last of them is done (see pending). An event no Alert wants is
// acknowledged at once, an invalid one terminated.
func (d *Dispatcher) route(ctx context.Context, msg jetstream.Msg) {
	e, alerts, o := d.match(ctx, msg)
	if len(alerts) == 0 {
		d.settle(msg, o)
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
	alerts, err = d.matching(rctx, e)
	if err != nil {
		// The cache or API server failing is temporary: hand the event back
		// after a pause rather than lose it.
		d.Log.Error(err, "matching an event against alerts", "event", e.ID)
		return e, nil, outcome{delay: 5 * time.Second}
	}
	return e, alerts, outcome{ack: true}
}

// readTimeout bounds the API reads of one routing or delivery (labels,
// Provider, Secret).
const readTimeout = 30 * time.Second

// matching returns the Alerts the event matches, across namespaces.
func (d *Dispatcher) matching(ctx context.Context, e *events.Event) ([]notificationv1.Alert, error) {
	var list notificationv1.AlertList
	if err := d.Client.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("listing alerts: %w", err)
	}
	var (
		labels    map[string]string
		labelsErr error
		fetched   bool
	)
	getLabels := func() (map[string]string, error) {
		if !fetched {
			labels, labelsErr = d.labels(ctx, e.InvolvedObject)
			fetched = true
		}
		return labels, labelsErr
	}
	var out []notificationv1.Alert
	for _, a := range list.Items {
		ok, err := d.matcher.Match(&a, e, getLabels)
		if err != nil {
			if labelsErr != nil && !apierrors.IsNotFound(labelsErr) {
				return nil, err
			}
			// A bad regex is reported on the Alert by its reconciler; a
			// deleted object has no labels to match.
			continue
		}
		if ok {
			out = append(out, a)
		}
	}
	return out, nil
}

// labels reads the involved object's labels (metadata only).
func (d *Dispatcher) labels(ctx context.Context, ref events.ObjectReference) (map[string]string, error) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil || ref.APIVersion == "" {
		// Plumb's own kinds are known without one.
		known, ok := kinds.Lookup(ref.Kind)
		if !ok || known.GVK.Kind != ref.Kind {
			return nil, fmt.Errorf("the event names no apiVersion for kind %s", ref.Kind)
		}
		gv = known.GVK.GroupVersion()
	}
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(gv.WithKind(ref.Kind))
	if err := d.Reader.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, obj); err != nil {
		return nil, err
	}
	return obj.GetLabels(), nil
}

// deliver sends the event to the alert's provider, retrying with backoff.
// It returns false only when ctx ended before the provider took the event
// or gave up. A panic is reported, on the Alert too, and counts as given up.
func (d *Dispatcher) deliver(ctx context.Context, alert *notificationv1.Alert, e *events.Event) (done bool) {
	var panicked error
	defer func() {
		if panicked != nil {
			d.giveUp(alert, e, errors.New("delivery failed on an internal error (a panic, reported in notification-controller's log)"))
			done = true
		}
	}()
	defer panics.Recover(&panicked, "alert delivery")
	log := d.Log.WithValues("alert", alert.Namespace+"/"+alert.Name, "provider", alert.Spec.ProviderRef.Name, "event", e.ID)
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), readTimeout)
	defer cancel()
	var provider notificationv1.Provider
	if err := d.Client.Get(rctx, client.ObjectKey{Namespace: alert.Namespace, Name: alert.Spec.ProviderRef.Name}, &provider); err != nil {
		d.giveUp(alert, e, fmt.Errorf("provider %s: %w", alert.Spec.ProviderRef.Name, err))
		return true
	}
	if provider.Spec.Suspend {
		return true
	}
	payload, err := withAlert(e, alert)
	if err != nil {
		log.Error(err, "an alert template failed on this event; sending the untemplated text")
	}
	key := string(provider.UID) + "/" + events.Fingerprint(&payload)
	labels := []string{provider.Namespace, provider.Name, provider.Spec.Type}
	// The same event again, not only the same news: JetStream delivers an
	// event again when its acknowledgement was lost (a NATS server lost
	// in between), and the provider took it already. Checked whatever
	// --rate-limit-interval says, which may be zero.
	once := alert.Namespace + "/" + alert.Name + "/" + string(provider.UID) + "/" + e.ID
	if d.delivered.Seen(once) {
		log.Info("event delivered to this provider already, not sent again: JetStream delivered it again after a lost acknowledgement")
		return true
	}
	if d.limiter.Seen(key) {
		d.Metrics.delivered("rateLimited", labels...)
		return true
	}

	// --delivery-retry-backoff, doubling up to --delivery-max-retry-backoff;
	// Until returns an error only when ctx ends while it waits.
	retry := wait.Backoff{Duration: d.Options.RetryBackoff, Factor: 2, Cap: d.Options.MaxRetryBackoff, Steps: math.MaxInt32}
	attempt := 0
	return retry.DelayFunc().Until(ctx, true, true, func(context.Context) (bool, error) {
		attempt++
		err := d.attempt(ctx, &provider, payload)
		if err == nil {
			d.Metrics.delivered("dispatched", labels...)
			d.limiter.Mark(key)
			d.delivered.Mark(once)
			return true, nil
		}
		var skipped *notifier.Skipped
		if errors.As(err, &skipped) {
			// The provider has nothing to do with this event (a commit
			// status without a commit): handled, not failed.
			log.Info("event not sent to the provider, which has nothing to do with it", "object",
				e.InvolvedObject.Kind+"/"+e.InvolvedObject.Namespace+"/"+e.InvolvedObject.Name, "why", skipped.Why)
			return true, nil
		}
		if notifier.IsPermanent(err) || attempt > d.Options.Retries {
			d.Metrics.delivered("failed", labels...)
			d.giveUp(alert, e, fmt.Errorf("after %d attempts: %w", attempt, err))
			return true, nil
		}
		log.V(1).Info("delivery failed, retrying", "attempt", attempt, "error", err.Error())
		return false, nil
	}) == nil
}

// deliveredWindow is how long the dispatcher remembers that an event was
// delivered: ten ack waits (ten minutes by default), well past the ack
// wait after which JetStream delivers again an event whose
// acknowledgement was lost, even when the acknowledgement was retried for
// a whole ack wait first (settle).
func deliveredWindow(ackWait time.Duration) time.Duration { return 10 * ackWait }

// Timeout is how long one delivery attempt through p may take: its
// spec.timeout, cut to max.
func Timeout(p *notificationv1.Provider, max time.Duration) time.Duration {
	t := p.GetTimeout().Duration
	if max > 0 && (t <= 0 || t > max) {
		return max
	}
	return t
}

// attempt makes one delivery, Secret read included, within the provider's
// timeout (at most --max-provider-timeout). It runs to that timeout even
// when shutdown begins, so a request in flight is not cut off halfway.
func (d *Dispatcher) attempt(ctx context.Context, provider *notificationv1.Provider, payload events.Event) error {
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), Timeout(provider, d.Options.MaxProviderTimeout))
	defer cancel()
	n, err := d.notifier(actx, provider)
	if err != nil {
		return err
	}
	start := time.Now()
	err = n.Post(actx, payload)
	d.Metrics.attempt(provider.Spec.Type, start)
	if err != nil && !notifier.IsSkipped(err) {
		// The Secret may have changed (a new address or token): read it
		// again for the retry.
		d.configs.forget(provider)
	}
	return err
}

// notifier returns the provider's notifier, reading its Secret at most
// once per configTTL while deliveries succeed.
func (d *Dispatcher) notifier(ctx context.Context, provider *notificationv1.Provider) (notifier.Notifier, error) {
	if n, ok := d.configs.get(provider); ok {
		return n, nil
	}
	cfg, err := notifier.ConfigFor(ctx, d.Reader, provider)
	if err != nil {
		var insecure *notifier.InsecureError
		if errors.As(err, &insecure) {
			return nil, &notifier.PermanentError{Err: err}
		}
		return nil, err
	}
	cfg.Client = d.HTTPClient
	cfg.Dialer = d.policy.Dialer()
	if cfg.ThreadPerObject {
		cfg.Threads = d.threads.For(string(provider.UID))
	}
	n, err := notifier.New(cfg)
	if err != nil {
		return nil, &notifier.PermanentError{Err: err}
	}
	d.configs.put(provider, n)
	return n, nil
}

// configTTL bounds how long a resolved provider configuration is reused; a
// rotated Secret takes effect within it (at once after a failed delivery).
const configTTL = 10 * time.Second

// configCache keeps resolved notifiers by provider UID and generation, so
// a burst of events does not read the Secret once per event.
type configCache struct {
	mu      sync.Mutex
	entries map[string]configEntry
}

type configEntry struct {
	n       notifier.Notifier
	expires time.Time
}

func configKey(p *notificationv1.Provider) string {
	return fmt.Sprintf("%s/%d", p.UID, p.Generation)
}

func (c *configCache) get(p *notificationv1.Provider) (notifier.Notifier, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[configKey(p)]
	if !ok || time.Now().After(e.expires) {
		return nil, false
	}
	return e.n, true
}

func (c *configCache) put(p *notificationv1.Provider, n notifier.Notifier) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[string]configEntry{}
	}
	now := time.Now()
	for k, e := range c.entries {
		if now.After(e.expires) {
			delete(c.entries, k)
		}
	}
	c.entries[configKey(p)] = configEntry{n: n, expires: now.Add(configTTL)}
}

func (c *configCache) forget(p *notificationv1.Provider) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.entries, configKey(p))
}

// giveUp records that a provider did not take an event.
func (d *Dispatcher) giveUp(alert *notificationv1.Alert, e *events.Event, err error) {
	d.Log.Info("giving up delivering an event", "alert", alert.Namespace+"/"+alert.Name, "event", e.ID, "error", err.Error())
	if d.Events != nil {
		d.Events.Eventf(alert, events.SeverityError, notificationv1.DeliveryFailedReason,
			"event %s about %s %s/%s not delivered to provider %s: %v",
			e.Reason, e.InvolvedObject.Kind, e.InvolvedObject.Namespace, e.InvolvedObject.Name, alert.Spec.ProviderRef.Name, err)
	}
}

// withAlert returns the event as the alert sends it: with the alert's
// eventMetadata added (the event's own keys win, so an Alert cannot
// misreport what a controller said), its summary and, with a message
// template, its message, both rendered over the event (alerttext). When a
// template fails it returns the error too, and the event with the
// untemplated text (the event's message, spec.summary as written): an
// event is never dropped for its Alert's template.
func withAlert(e *events.Event, alert *notificationv1.Alert) (events.Event, error) {
	out := *e
	if len(alert.Spec.EventMetadata) > 0 {
		meta := make(map[string]string, len(e.Metadata)+len(alert.Spec.EventMetadata)+1)
		maps.Copy(meta, alert.Spec.EventMetadata)
		maps.Copy(meta, e.Metadata)
		out.Metadata = meta
	}
	if alert.Spec.Summary == "" && alert.Spec.MessageTemplate == "" {
		return out, nil
	}
	text := alerttext.Rendered{Summary: alert.Spec.Summary, Message: e.Message}
	tmpl, err := alerttext.Parse(alert)
	if err == nil {
		// Templates see the metadata the alert sends, without the summary.
		text, err = tmpl.Render(&out)
	}
	out.Message = text.Message
	if text.Summary != "" {
		if _, own := e.Metadata[notifier.SummaryKey]; !own {
			meta := maps.Clone(out.Metadata)
			if meta == nil {
				meta = map[string]string{}
			}
			meta[notifier.SummaryKey] = text.Summary
			out.Metadata = meta
		}
	}
	return out, err
}
