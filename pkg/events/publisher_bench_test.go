package events

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// BenchmarkPublish measures what a reconcile pays per event: the call
// returns once the event is queued.
func BenchmarkPublish(b *testing.B) {
	opts := natsOptions("nats://127.0.0.1:1") // nothing listens: events only queue
	opts.QueueSize = 1 << 20
	p, err := NewJetStreamPublisher(opts, "bench", logr.Discard())
	if err != nil {
		b.Fatal(err)
	}
	e := testEvent("bench", 0)
	b.ReportAllocs()
	for b.Loop() {
		p.Publish(e)
	}
	b.StopTimer()
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	_ = p.Close(ctx)
}

// BenchmarkPublishStored measures throughput to the embedded JetStream
// server: events published and stored (acknowledged) per second.
func BenchmarkPublishStored(b *testing.B) {
	opts := envOptions(environment(b))
	opts.QueueSize = b.N + 1 // measure storing, not dropping
	p, err := NewJetStreamPublisher(opts, "bench-stored", logr.Discard())
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b.ResetTimer()
	for range b.N {
		p.Publish(testEvent("bench-stored", 0))
	}
	// The timer runs until every event is stored.
	if err := p.Close(ctx); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	if dropped := testutil.ToFloat64(eventsDropped.WithLabelValues("bench-stored")); dropped > 0 {
		b.Fatalf("%v events dropped", dropped)
	}
}
