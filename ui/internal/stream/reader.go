package stream

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"github.com/nats-io/nats.go/jetstream"

	"plumb.dev/pkg/events"
)

// retryEvery is how long the reader waits after a failed read (NATS down,
// no stream yet, a consumer lost) before starting a new consumer.
const retryEvery = time.Second

// Start connects to NATS and reads the stream into a new Index until ctx
// ends. It returns at once: the history is read in the background (see
// Synced), and while NATS is down the Index answers with what it has. With
// no NATS URL the Index stays empty, and synced. It fails only on a
// configuration that cannot work.
func Start(ctx context.Context, cfg Config) (*Index, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	x := newIndex(cfg)
	if cfg.NATS.URL == "" {
		x.markSynced()
		return x, nil
	}
	conn, err := events.Connect(cfg.NATS, "plumb-ui", cfg.Log)
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(conn.Conn)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("using JetStream: %w", err)
	}
	x.conn = conn
	ctx, x.stop = context.WithCancel(ctx)
	x.stopped = make(chan struct{})
	go func() {
		defer close(x.stopped)
		defer conn.Close()
		r := &reader{x: x, js: js, conn: conn, stream: cfg.NATS.Stream, log: cfg.Log}
		r.run(ctx)
	}()
	return x, nil
}

// Close stops reading the stream and closes the NATS connection, as the
// end of Start's context does, and waits until both are done. The Index
// still answers with what it holds.
func (x *Index) Close() {
	if x.stop == nil {
		return
	}
	x.stop()
	<-x.stopped
}

// reader fills an Index from the stream.
type reader struct {
	x      *Index
	js     jetstream.JetStream
	conn   *events.Conn
	stream string
	log    logr.Logger
	// created is when the stream the Index holds was created: another
	// time means it was deleted and created again, and its sequences
	// started over.
	created time.Time
}

// checkEvery is how often the reader asks whether the stream it follows
// is still the one it started on: an ordered consumer on a stream that was
// deleted and created again waits, without an error, for a sequence the
// new stream reaches late or never.
const checkEvery = 5 * time.Second

// errRecreated ends a read of a stream that was created again.
var errRecreated = errors.New("the stream was created again")

// run reads until ctx ends, starting a new ordered consumer after the last
// sequence stored whenever one fails.
func (r *reader) run(ctx context.Context) {
	waiting := false // for the stream to be created, said once
	for ctx.Err() == nil {
		err := r.read(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case errors.Is(err, errRecreated):
			continue // at once: read the new stream from its start
		case errors.Is(err, jetstream.ErrStreamNotFound):
			if !waiting {
				r.log.Info("no event stream yet: no controller has published; waiting for it", "stream", r.stream)
			}
			waiting = true
		default:
			waiting = false
			r.conn.Failed(err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(retryEvery):
		}
	}
}

// read follows the stream from after the last stored sequence with one
// ordered consumer, until it fails, the stream is created again or ctx
// ends.
func (r *reader) read(ctx context.Context) error {
	st, err := r.js.Stream(ctx, r.stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		// No controller has published yet: there is no history to wait for.
		r.x.markSynced()
		return fmt.Errorf("no stream %s yet: %w", r.stream, err)
	}
	if err != nil {
		return fmt.Errorf("reading stream %s: %w", r.stream, err)
	}
	created := st.CachedInfo().Created
	if !r.created.IsZero() && !created.Equal(r.created) {
		r.log.Info("the event stream was created again; reading it from its start", "stream", r.stream)
		r.x.reset()
	}
	r.created = created
	cfg := jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{events.SubjectPrefix + ".>"},
		DeliverPolicy:  jetstream.DeliverAllPolicy,
	}
	if last := r.x.lastSeq(); last > 0 {
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, last+1
	}
	cons, err := st.OrderedConsumer(ctx, cfg)
	if err != nil {
		return fmt.Errorf("creating a consumer on %s: %w", r.stream, err)
	}
	info, err := cons.Info(ctx)
	if err != nil {
		return fmt.Errorf("reading the consumer on %s: %w", r.stream, err)
	}
	if info.NumPending == 0 {
		r.x.markSynced()
	}
	r.conn.OK()
	it, err := cons.Messages()
	if err != nil {
		return fmt.Errorf("reading %s: %w", r.stream, err)
	}
	defer it.Stop()
	stop := context.AfterFunc(ctx, it.Stop)
	defer stop()
	watch, endWatch := context.WithCancel(ctx)
	defer endWatch()
	recreated := make(chan struct{})
	go r.watch(watch, created, func() { close(recreated); it.Stop() })
	for {
		msg, err := it.Next()
		if err != nil {
			select {
			case <-recreated:
				return errRecreated
			default:
			}
			return fmt.Errorf("reading %s: %w", r.stream, err)
		}
		md, err := msg.Metadata()
		if err != nil {
			return fmt.Errorf("reading %s: %w", r.stream, err)
		}
		r.x.add(md.Sequence.Stream, msg.Data())
		if md.NumPending == 0 {
			r.x.markSynced()
		}
	}
}

// watch calls recreated once the stream is gone or was created at another
// time than created, until ctx ends. A failed look (NATS away) is no
// answer: the consumer's own errors tell of that.
func (r *reader) watch(ctx context.Context, created time.Time, recreated func()) {
	tick := time.NewTicker(checkEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		st, err := r.js.Stream(ctx, r.stream)
		if errors.Is(err, jetstream.ErrStreamNotFound) || (err == nil && !st.CachedInfo().Created.Equal(created)) {
			recreated()
			return
		}
	}
}
