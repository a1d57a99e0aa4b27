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
	go func() {
		defer conn.Close()
		r := reader{x: x, js: js, conn: conn, stream: cfg.NATS.Stream, log: cfg.Log}
		r.run(ctx)
	}()
	return x, nil
}

// reader fills an Index from the stream.
type reader struct {
	x      *Index
	js     jetstream.JetStream
	conn   *events.Conn
	stream string
	log    logr.Logger
}

// run reads until ctx ends, starting a new ordered consumer after the last
// sequence stored whenever one fails.
func (r reader) run(ctx context.Context) {
	waiting := false // for the stream to be created, said once
	for ctx.Err() == nil {
		err := r.read(ctx)
		switch {
		case ctx.Err() != nil:
			return
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
// ordered consumer, until it fails or ctx ends.
func (r reader) read(ctx context.Context) error {
	st, err := r.js.Stream(ctx, r.stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		// No controller has published yet: there is no history to wait for.
		r.x.markSynced()
		return fmt.Errorf("no stream %s yet: %w", r.stream, err)
	}
	if err != nil {
		return fmt.Errorf("reading stream %s: %w", r.stream, err)
	}
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
	for {
		msg, err := it.Next()
		if err != nil {
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
