package events

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"

	kustomizev1 "plumb.dev/api/kustomize/v1"
)

// lines collects the log lines a publisher writes.
type lines struct {
	mu  sync.Mutex
	all []string
}

func (l *lines) add(prefix, args string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.all = append(l.all, prefix+" "+args)
}

func (l *lines) containing(s string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, line := range l.all {
		if strings.Contains(line, s) {
			out = append(out, line)
		}
	}
	return out
}

// TestAnOutageLongerThanTheQueueDropsTheOldestAndSaysSoOnce stops NATS
// while a publisher with a queue of 5 (--events-queue-size=5) takes 12
// events: when NATS returns, the newest 5 are stored in order, the 7 others
// are counted in plumb_events_dropped_total, and one log line names them by
// reason, however many there were.
func TestAnOutageLongerThanTheQueueDropsTheOldestAndSaysSoOnce(t *testing.T) {
	env := environment(t)
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	logs := &lines{}
	opts := envOptions(env)
	opts.QueueSize = 5
	p, err := NewJetStreamPublisher(opts, "overflow-test", funcr.New(logs.add, funcr.Options{}))
	g.Expect(err).NotTo(HaveOccurred())
	defer p.Close(ctx)

	p.Publish(testEvent("overflow", 0))
	g.Expect(stored(ctx, t, "overflow", 1)).To(HaveLen(1))
	droppedBefore := testutil.ToFloat64(eventsDropped.WithLabelValues("overflow-test"))

	env.StopNATS()
	want := []string{"event 0"}
	for i := 1; i <= 12; i++ {
		e := testEvent("overflow", i)
		if i%4 == 0 {
			e.Reason = kustomizev1.DriftCorrectedReason
		}
		p.Publish(e)
		if i > 7 {
			want = append(want, fmt.Sprintf("event %d", i))
		}
	}
	g.Expect(p.Len()).To(Equal(5))
	g.Expect(testutil.ToFloat64(eventsDropped.WithLabelValues("overflow-test"))).To(Equal(droppedBefore + 7))
	g.Expect(logs.containing("were dropped")).To(BeEmpty(), "reported at the end of the outage, not per event")
	g.Expect(env.RestartNATS()).To(Succeed())

	g.Eventually(p.Len, time.Minute, 100*time.Millisecond).Should(BeZero())
	g.Expect(messages(stored(ctx, t, "overflow", 6))).To(Equal(want))
	reports := logs.containing("were dropped")
	g.Expect(reports).To(HaveLen(1), "one line for the outage; all lines:\n%s", strings.Join(logs.all, "\n"))
	// Dropped: events 1-7, of which 4 is DriftCorrected.
	g.Expect(reports[0]).To(ContainSubstring(`"dropped"=7`))
	g.Expect(reports[0]).To(ContainSubstring(`"reasons"="NewArtifact: 6, DriftCorrected: 1"`))
	g.Expect(reports[0]).To(ContainSubstring(`"queueSize"=5`))

	// A second, short outage within the queue loses nothing and says
	// nothing of drops.
	env.StopNATS()
	p.Publish(testEvent("overflow", 13))
	g.Expect(env.RestartNATS()).To(Succeed())
	g.Eventually(p.Len, time.Minute, 100*time.Millisecond).Should(BeZero())
	g.Expect(stored(ctx, t, "overflow", 7)).To(HaveLen(7))
	g.Expect(p.Close(ctx)).To(Succeed())
	g.Expect(logs.containing("were dropped")).To(HaveLen(1))
	g.Expect(testutil.ToFloat64(eventsDropped.WithLabelValues("overflow-test"))).To(Equal(droppedBefore + 7))
}

// TestDroppedEventsAreNamedByTheFirstTenReasons: the report stays
// one bounded line however many distinct reasons were dropped, the later
// reasons summed as "other".
func TestDroppedEventsAreNamedByTheFirstTenReasons(t *testing.T) {
	g := NewWithT(t)
	var d droppedEvents
	for i := range 12 {
		for range i + 1 {
			d.add(fmt.Sprintf("Reason%02d", i))
		}
	}
	g.Expect(d.total).To(Equal(78))
	g.Expect(d.String()).To(Equal("Reason09: 10, Reason08: 9, Reason07: 8, Reason06: 7, Reason05: 6, Reason04: 5, Reason03: 4, Reason02: 3, Reason01: 2, Reason00: 1, other: 23"))
}
