package dispatch

import (
	"cmp"
	"context"
	"errors"
	"hash/fnv"
	"math"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"k8s.io/apimachinery/pkg/util/wait"

	"plumb.dev/pkg/events"
	"plumb.dev/pkg/options"
)

// fetchBatch is how many events one pull asks for.
const fetchBatch = 64

// fetchWait is how long one pull waits for events; shutdown waits for the
// last pull to end.
const fetchWait = 3 * time.Second

// stream is the dispatcher's JetStream side: the durable pull consumer,
// the events this process holds (in flight, kept alive while deliveries
// take their time), and how each ends — acknowledged with the server's
// confirmation, terminated, handed back for redelivery, or set aside at
// shutdown and handed back in stream order. It knows nothing of Alerts and
// Providers: what to do with an event is the dispatcher's.
type stream struct {
	nats         options.NATS
	consumerName string
	ackWait      time.Duration
	// subjects narrow the consumer.
	subjects []string
	log      logr.Logger

	// conn is the consumer's connection once Start made it, for check.
	conn atomic.Pointer[events.Conn]

	mu       sync.Mutex
	inflight map[jetstream.Msg]struct{}
	// aside holds the events handed back at the end of shutdown.
	aside []jetstream.Msg
}

// check fails while the NATS server refuses the consumer (credentials,
// permissions, TLS), and passes before the connection is made.
func (s *stream) check(r *http.Request) error {
	if c := s.conn.Load(); c != nil {
		return c.Check(r)
	}
	return nil
}

// ok tells the connection that the server took a request, which ends a
// refused permission.
func (s *stream) ok() {
	if c := s.conn.Load(); c != nil {
		c.OK()
	}
}

// consume pulls events and hands each to its worker until ctx ends,
// recreating the consumer after errors (NATS down, stream deleted). The
// subject (one per object) picks the worker, so the events about one
// object stay in order.
func (s *stream) consume(ctx context.Context, js jetstream.JetStream, workers []chan jetstream.Msg) {
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
	log := s.log.WithValues("consumer", s.consumerName)
	var cons jetstream.Consumer
	failing := false
	// fail logs the first failure of a run, drops the consumer to make it
	// again and pauses; false when ctx ended meanwhile.
	fail := func(msg string, err error) bool {
		if !failing && ctx.Err() == nil {
			log.Info(msg, "error", err.Error())
			failing = true
		}
		cons = nil
		return pause()
	}
	for ctx.Err() == nil {
		if cons == nil {
			var err error
			if cons, err = s.consumer(ctx, js); err != nil {
				if !fail("cannot create the JetStream consumer, retrying", err) {
					return
				}
				continue
			}
			s.ok()
		}
		// No context: a pull is never cut short, so when the loop ends the
		// server holds no pull request of ours. Events handed back at
		// shutdown then go straight to the redelivery queue in order; with
		// a request left behind, the server would take one, find nobody
		// listening and queue it again behind the others.
		batch, err := cons.Fetch(fetchBatch, jetstream.FetchMaxWait(fetchWait))
		if err != nil {
			if !fail("cannot fetch events, retrying", err) {
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
			s.ok()
			s.track(msg)
			workers[shard(msg.Subject(), len(workers))] <- msg
		}
		if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) && ctx.Err() == nil {
			if !fail("fetching events failed, retrying", err) {
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
func (s *stream) consumer(ctx context.Context, js jetstream.JetStream) (jetstream.Consumer, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := events.EnsureStream(ctx, js, s.nats); err != nil {
		return nil, err
	}
	cfg := jetstream.ConsumerConfig{
		Durable:       s.consumerName,
		Description:   "notification-controller: alerts from Plumb events",
		DeliverPolicy: jetstream.DeliverNewPolicy,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       s.ackWait,
		MaxDeliver:    -1,
		MaxAckPending: 1000,
	}
	if len(s.subjects) == 1 {
		cfg.FilterSubject = s.subjects[0]
	} else {
		cfg.FilterSubjects = s.subjects
	}
	return js.CreateOrUpdateConsumer(ctx, s.nats.Stream, cfg)
}

func shard(subject string, n int) int {
	h := fnv.New32a()
	h.Write([]byte(subject))
	return int(h.Sum32() % uint32(n))
}

// keepAlive tells JetStream, every third of the ack wait, that the events
// this process holds are still being worked on, so slow deliveries and
// events queued behind them are not redelivered.
func (s *stream) keepAlive(ctx context.Context) {
	t := time.NewTicker(s.ackWait / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s.mu.Lock()
		held := make([]jetstream.Msg, 0, len(s.inflight))
		for m := range s.inflight {
			held = append(held, m)
		}
		s.mu.Unlock()
		for _, m := range held {
			_ = m.InProgress()
		}
	}
}

func (s *stream) track(msg jetstream.Msg) {
	s.mu.Lock()
	s.inflight[msg] = struct{}{}
	s.mu.Unlock()
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
func (s *stream) settle(msg jetstream.Msg, o outcome) {
	defer func() {
		s.mu.Lock()
		delete(s.inflight, msg)
		s.mu.Unlock()
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
	ctx, cancel := context.WithTimeout(context.Background(), s.ackWait)
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
		s.log.Info("could not acknowledge an event; JetStream will deliver it again", "subject", msg.Subject(), "error", err.Error())
	}
}

// setAside keeps an event this instance will not deliver, to hand back at
// the end of shutdown.
func (s *stream) setAside(msg jetstream.Msg) {
	s.mu.Lock()
	s.aside = append(s.aside, msg)
	s.mu.Unlock()
}

// handBackAll negatively acknowledges the events set aside, in stream
// order, so the next instance gets them at once and in order (JetStream
// redelivers before it delivers new events).
func (s *stream) handBackAll() {
	s.mu.Lock()
	aside := s.aside
	s.aside = nil
	s.mu.Unlock()
	seq := func(m jetstream.Msg) uint64 {
		if md, err := m.Metadata(); err == nil {
			return md.Sequence.Stream
		}
		return 0
	}
	slices.SortStableFunc(aside, func(a, b jetstream.Msg) int { return cmp.Compare(seq(a), seq(b)) })
	for _, m := range aside {
		s.settle(m, outcome{})
	}
}
