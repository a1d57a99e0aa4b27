package events

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// panickingJS panics on publishing a message that holds boom, as a NATS
// client might on a reply it cannot handle.
type panickingJS struct {
	jetstream.JetStream
	boom string
}

func (j panickingJS) PublishMsg(ctx context.Context, m *nats.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	if strings.Contains(string(m.Data), j.boom) {
		panic("a reply the client cannot handle")
	}
	return j.JetStream.PublishMsg(ctx, m, opts...)
}

// TestAPanicWhilePublishingDropsThatEventOnly: the publisher's goroutine
// recovers, drops and counts the event it panicked on (sending it again
// would panic again), and goes on with the next ones.
func TestAPanicWhilePublishingDropsThatEventOnly(t *testing.T) {
	env := environment(t)
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := NewJetStreamPublisher(envOptions(env), "panic-test", logr.Discard())
	g.Expect(err).NotTo(HaveOccurred())
	// Nothing is queued yet, so the goroutine waits for Publish's signal,
	// which orders this write before its next read.
	p.js = panickingJS{JetStream: p.js, boom: `"event 1"`}

	for i := range 3 {
		p.Publish(testEvent("panic", i))
	}
	g.Expect(p.Close(ctx)).To(Succeed())
	g.Expect(messages(stored(ctx, t, "panic", 2))).To(Equal([]string{"event 0", "event 2"}))
	g.Expect(testutil.ToFloat64(eventsDropped.WithLabelValues("panic-test"))).To(Equal(1.0))
}
