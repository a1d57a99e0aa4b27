package dispatch

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	notificationv1 "plumb.dev/api/notification/v1"
	"plumb.dev/pkg/app"
	"plumb.dev/pkg/events"
)

// TestAnEventAProviderSkipsIsHandledNotFailed: a github (commit status)
// Provider given a Kustomization event without a commit SHA in its revision
// skips it: the event is acknowledged at once, nothing is sent, no
// DeliveryFailed event is recorded and no failure counted, and the next
// event, with a commit, is delivered.
func TestAnEventAProviderSkipsIsHandledNotFailed(t *testing.T) {
	g := NewWithT(t)
	var (
		mu    sync.Mutex
		paths []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.Method+" "+r.URL.Path)
		mu.Unlock()
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(srv.Close)
	d, _ := newTestDispatcher(t, notificationv1.GitHubProvider, srv.URL+"/org/repo")
	reg := prometheus.NewRegistry()
	d.Metrics = NewMetrics(reg)
	published := &recordingPublisher{}
	d.Events = events.NewRecorder(nil, published, app.NewScheme(), ControllerName)
	sent := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), paths...)
	}

	for _, rev := range []string{"", "main@sha1:4f3c2b1a", "latest@sha256:" + strings.Repeat("a", 64)} {
		d.send(t, kustomizationEvent(events.SeverityInfo, kustomizev1.AppliedReason, "applied", rev))
	}
	g.Expect(sent()).To(BeEmpty(), "nothing is sent for an event without a commit")
	g.Expect(published.reasons()).To(BeEmpty(), "a skipped event is no failed delivery")
	g.Expect(testutil.CollectAndCount(d.Metrics.eventsFailed)).To(BeZero(), "no failure counted")

	sha := strings.Repeat("c", 40)
	d.send(t, kustomizationEvent(events.SeverityInfo, kustomizev1.AppliedReason, "applied", "main@sha1:"+sha))
	g.Expect(sent()).To(Equal([]string{
		"GET /api/v3/repos/org/repo/commits/" + sha + "/status", // what the commit shows (the stand-in answers 201, no JSON: posted anyway)
		"POST /api/v3/repos/org/repo/statuses/" + sha,
	}))
	g.Expect(testutil.ToFloat64(d.Metrics.eventsDispatched)).To(Equal(1.0))
	g.Expect(published.reasons()).To(BeEmpty())
}

// recordingPublisher keeps the reasons of the events published.
type recordingPublisher struct {
	mu  sync.Mutex
	got []string
}

func (p *recordingPublisher) Publish(e events.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.got = append(p.got, e.Reason)
}

func (p *recordingPublisher) reasons() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.got...)
}
