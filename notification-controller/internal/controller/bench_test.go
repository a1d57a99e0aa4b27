package controller

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	notificationv1 "plumb.dev/api/notification/v1"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/events"
)

// BenchmarkDispatch measures events per second from a controller's Publish
// to a webhook's 200, through JetStream, matching and delivery, for events
// spread over 8 objects (so the workers run in parallel).
func BenchmarkDispatch(b *testing.B) {
	t := b
	ns := newNamespace(t)
	hook := newEndpoint(t)
	p := createProvider(t, ns, "hook", notificationv1.GenericProvider, hook.URL, nil)
	waitReady(t, p, metav1.ConditionTrue)
	waitReady(t, createAlert(t, ns, "all", "hook", nil), metav1.ConditionTrue)
	opts := testOptions(ns)
	opts.RateLimitInterval = 0
	startDispatcher(t, ns, opts)
	repos := make([]*sourcev1.GitRepository, 8)
	for i := range repos {
		repos[i] = gitRepository(t, ns, "repo-"+string(rune('a'+i)), nil, false)
	}
	b.ResetTimer()
	for i := range b.N {
		// Stay under the publisher's queue bound, which drops beyond it.
		for publisher.Len() > natsOpt.QueueSize/2 {
			time.Sleep(time.Millisecond)
		}
		controllers.Eventf(repos[i%len(repos)], events.SeverityInfo, "Progress", "event %d", i)
	}
	deadline := time.Now().Add(5 * time.Minute)
	for len(hook.requests()) < b.N {
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d delivered", len(hook.requests()), b.N)
		}
		time.Sleep(time.Millisecond)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}
