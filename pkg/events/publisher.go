package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"k8s.io/apimachinery/pkg/util/wait"

	"plumb.dev/pkg/options"
	"plumb.dev/pkg/panics"
)

// StreamSubjects are the subjects the events stream holds.
const StreamSubjects = SubjectPrefix + ".>"

// DuplicateWindow is how long JetStream remembers message ids to drop a
// retried publish it already stored.
const DuplicateWindow = 2 * time.Minute

// Retry timing of the background sender: the first retry after minBackoff,
// doubling up to maxBackoff while NATS stays unreachable.
const (
	minBackoff     = 100 * time.Millisecond
	maxBackoff     = 5 * time.Second
	publishTimeout = 5 * time.Second
)

// PublishCloser is a Publisher that must be closed on shutdown, which sends
// what is still queued.
type PublishCloser interface {
	Publisher
	Close(ctx context.Context) error
	// Check is a readiness check: it fails while the NATS server refuses
	// the controller (credentials, permissions, TLS).
	Check(*http.Request) error
}

// Close does nothing.
func (NopPublisher) Close(context.Context) error { return nil }

// Check passes: there is no server to refuse anything.
func (NopPublisher) Check(*http.Request) error { return nil }

// NewPublisher returns a JetStreamPublisher, or a NopPublisher when
// opts.URL is empty (publishing disabled by flag).
func NewPublisher(opts options.NATS, controller string, log logr.Logger) (PublishCloser, error) {
	if opts.URL == "" {
		log.Info("no NATS URL given, events are not published to a stream")
		return NopPublisher{}, nil
	}
	return NewJetStreamPublisher(opts, controller, log)
}

// JetStreamPublisher publishes events to a JetStream stream without ever
// blocking the caller. Publish puts the event in a bounded in-memory queue; a
// single background sender publishes the queue in order, one event at a time,
// and retries the head with backoff while NATS is unreachable, so events
// about one object stay in order. When the queue is full the oldest event is
// dropped (and counted in plumb_events_dropped_total): the newest state is
// the one worth reporting. Each message carries the event id as Nats-Msg-Id,
// so a publish retried after a lost acknowledgement is stored once.
type JetStreamPublisher struct {
	opts       options.NATS
	controller string
	log        logr.Logger

	nc *Conn
	js jetstream.JetStream

	mu      sync.Mutex
	queue   []queued
	nextSeq uint64
	closing bool

	wake chan struct{}
	// ctx ends the sender; it is cancelled by Close once the queue is
	// drained or Close's own context ends.
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	// streamReady is only touched by the sender goroutine.
	streamReady bool

	// dropped counts, by reason, the events dropped from a full queue
	// since the last report; under mu. The sender names them in one log
	// line when the outage ends (reportDropped), not one line per event.
	dropped droppedEvents
}

type queued struct {
	seq     uint64
	id      string
	subject string
	reason  string
	data    []byte
}

// NewJetStreamPublisher connects to NATS and starts the background sender.
// It does not wait for NATS: when the server is unreachable the connection
// keeps retrying forever and the stream is created (or updated to the
// options' limits) as soon as it answers. It fails only on options that
// cannot work.
func NewJetStreamPublisher(opts options.NATS, controller string, log logr.Logger) (*JetStreamPublisher, error) {
	switch {
	case opts.URL == "":
		return nil, errors.New("events: no NATS URL")
	case opts.Stream == "":
		return nil, errors.New("events: no JetStream stream name")
	case opts.QueueSize < 1:
		return nil, fmt.Errorf("events: the queue size must be at least 1, got %d", opts.QueueSize)
	}
	p := &JetStreamPublisher{
		opts:       opts,
		controller: controller,
		log:        log.WithName("events"),
		wake:       make(chan struct{}, 1),
		done:       make(chan struct{}),
	}
	nc, err := Connect(opts, controller, p.log,
		// No client-side buffer while disconnected: the queue here is the
		// buffer, bounded and counted, and a publish should fail fast so the
		// sender backs off instead of waiting for acknowledgements.
		nats.ReconnectBufSize(-1),
	)
	if err != nil {
		return nil, fmt.Errorf("events: %w", err)
	}
	js, err := jetstream.New(nc.Conn)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("events: %w", err)
	}
	p.nc, p.js = nc, js
	p.ctx, p.cancel = context.WithCancel(context.Background())
	queueLength.WithLabelValues(controller).Set(0)
	go p.run()
	return p, nil
}

// Check is a readiness check: it fails while the NATS server refuses this
// publisher (credentials, permissions, TLS), naming why, and passes while
// NATS is only unreachable.
func (p *JetStreamPublisher) Check(r *http.Request) error { return p.nc.Check(r) }

// Publish queues the event and returns at once.
func (p *JetStreamPublisher) Publish(e Event) {
	data, err := json.Marshal(e)
	if err != nil {
		// Only a broken event type can get here; count it as dropped.
		eventsDropped.WithLabelValues(p.controller).Inc()
		p.log.Error(err, "dropping an event that cannot be encoded", "reason", e.Reason)
		return
	}
	p.mu.Lock()
	if p.closing {
		p.mu.Unlock()
		eventsDropped.WithLabelValues(p.controller).Inc()
		return
	}
	if len(p.queue) >= p.opts.QueueSize {
		// Oldest first: shift rather than reslice so the backing array does
		// not grow without bound.
		p.dropped.add(p.queue[0].reason)
		n := copy(p.queue, p.queue[1:])
		p.queue = p.queue[:n]
		eventsDropped.WithLabelValues(p.controller).Inc()
	}
	p.nextSeq++
	p.queue = append(p.queue, queued{seq: p.nextSeq, id: e.ID, subject: e.Subject(), reason: e.Reason, data: data})
	queueLength.WithLabelValues(p.controller).Set(float64(len(p.queue)))
	p.mu.Unlock()
	p.signal()
}

// Len returns the number of events waiting to be stored.
func (p *JetStreamPublisher) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.queue)
}

// Close stops accepting events, waits until the queue is stored in the
// stream or ctx ends, then closes the connection. It returns an error saying
// how many events were lost when ctx ended first.
func (p *JetStreamPublisher) Close(ctx context.Context) error {
	p.mu.Lock()
	already := p.closing
	p.closing = true
	p.mu.Unlock()
	if !already {
		p.signal()
	}
	var err error
	defer p.reportDropped()
	select {
	case <-p.done:
	case <-ctx.Done():
		p.cancel()
		<-p.done
		if n := p.Len(); n > 0 {
			eventsDropped.WithLabelValues(p.controller).Add(float64(n))
			err = fmt.Errorf("events: %d events not published before shutdown: %w", n, ctx.Err())
		}
	}
	p.cancel()
	p.nc.Close()
	return err
}

func (p *JetStreamPublisher) signal() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// head returns the oldest queued event; ok is false when the queue is
// empty. drained is true when the queue is empty and Close was called.
func (p *JetStreamPublisher) head() (q queued, ok, drained bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.queue) == 0 {
		return queued{}, false, p.closing
	}
	return p.queue[0], true, false
}

// remove takes the event with sequence seq off the head of the queue, unless
// it was already dropped to make room while it was being sent.
func (p *JetStreamPublisher) remove(seq uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.queue) > 0 && p.queue[0].seq == seq {
		n := copy(p.queue, p.queue[1:])
		p.queue[n] = queued{}
		p.queue = p.queue[:n]
	}
	queueLength.WithLabelValues(p.controller).Set(float64(len(p.queue)))
}

// run is the background sender.
func (p *JetStreamPublisher) run() {
	defer close(p.done)
	initial := wait.Backoff{Duration: minBackoff, Factor: 2, Cap: maxBackoff, Steps: math.MaxInt32}
	backoff := initial
	failing := false
	var lastLog, lastDropReport time.Time
	for {
		q, ok, drained := p.head()
		if drained {
			return
		}
		if !ok {
			select {
			case <-p.wake:
				continue
			case <-p.ctx.Done():
				return
			}
		}
		err := p.sendRecovered(q)
		var panicked *panics.Error
		if errors.As(err, &panicked) {
			// Sending it again would panic again: drop the event (logged
			// and counted by pkg/panics), not the process.
			p.remove(q.seq)
			eventsDropped.WithLabelValues(p.controller).Inc()
			continue
		}
		if err != nil {
			// Say so when an outage starts, and once a minute while it
			// lasts, not on every retry.
			if !failing || time.Since(lastLog) >= time.Minute {
				p.log.Info("cannot publish events, retrying", "error", err.Error(), "queued", p.Len())
				failing, lastLog = true, time.Now()
			}
			select {
			case <-time.After(backoff.Step()):
			case <-p.ctx.Done():
				return
			}
			continue
		}
		p.nc.OK()
		if failing {
			p.log.Info("publishing events again", "queued", p.Len())
			failing = false
			// The outage is over: what it cost, in one line.
			p.reportDropped()
			lastDropReport = time.Now()
		} else if time.Since(lastDropReport) >= time.Minute && p.reportDropped() {
			// A burst larger than the queue while NATS answers: at
			// most one line a minute.
			lastDropReport = time.Now()
		}
		backoff = initial
		p.remove(q.seq)
		eventsPublished.WithLabelValues(p.controller).Inc()
	}
}

// sendRecovered is send, with a panic (in the NATS client, on what the
// server answered) returned as a *panics.Error.
func (p *JetStreamPublisher) sendRecovered(q queued) (err error) {
	defer panics.Recover(&err, "publish")
	return p.send(q)
}

// send creates the stream if needed and publishes one event, waiting for the
// stream's acknowledgement.
func (p *JetStreamPublisher) send(q queued) error {
	if !p.streamReady {
		if err := p.ensureStream(); err != nil {
			return err
		}
		p.streamReady = true
	}
	ctx, cancel := context.WithTimeout(p.ctx, publishTimeout)
	defer cancel()
	msg := &nats.Msg{Subject: q.subject, Data: q.data, Header: nats.Header{}}
	msg.Header.Set("Content-Type", "application/json")
	ack, err := p.js.PublishMsg(ctx, msg, jetstream.WithMsgID(q.id), jetstream.WithRetryAttempts(0))
	if err != nil {
		if errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, nats.ErrNoResponders) {
			// The stream may have been deleted (or the server restarted
			// without its store): create it again before the next try.
			p.streamReady = false
		}
		return fmt.Errorf("publishing event %s on %s: %w", q.id, q.subject, err)
	}
	if ack.Stream != p.opts.Stream {
		return fmt.Errorf("event %s was stored in stream %q, not %q: another stream claims %s", q.id, ack.Stream, p.opts.Stream, q.subject)
	}
	return nil
}

// StreamConfig returns the configuration of the events stream for opts.
func StreamConfig(opts options.NATS) jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:        opts.Stream,
		Description: "Plumb controller events (" + SchemaVersion + ")",
		Subjects:    []string{StreamSubjects},
		Retention:   jetstream.LimitsPolicy,
		Discard:     jetstream.DiscardOld,
		MaxAge:      opts.StreamMaxAge,
		MaxBytes:    opts.StreamMaxBytes,
		Storage:     jetstream.FileStorage,
		Duplicates:  DuplicateWindow,
		// Copies on as many servers of a cluster; an existing stream is
		// scaled to it by the update every controller makes at start.
		Replicas: opts.StreamReplicas,
	}
}

// ensureStream creates the stream or updates it to the options' limits.
// Every controller does this at start with the same configuration, so the
// order in which they start does not matter.
func (p *JetStreamPublisher) ensureStream() error {
	ctx, cancel := context.WithTimeout(p.ctx, publishTimeout)
	defer cancel()
	if _, err := EnsureStream(ctx, p.js, p.opts); err != nil {
		return err
	}
	return nil
}

// EnsureStream creates the events stream, or updates an existing one to the
// configuration for opts. Consumers call it too, so they can bind to the
// stream before any controller published.
func EnsureStream(ctx context.Context, js jetstream.JetStream, opts options.NATS) (jetstream.Stream, error) {
	cfg := StreamConfig(opts)
	if cfg.MaxAge <= 0 {
		cfg.MaxAge = 0 // unlimited
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = -1 // unlimited
	}
	s, err := js.CreateOrUpdateStream(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("creating or updating JetStream stream %s: %w", cfg.Name, err)
	}
	return s, nil
}
