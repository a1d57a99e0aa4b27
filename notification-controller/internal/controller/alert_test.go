package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	notificationv1 "plumb.dev/api/notification/v1"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/notification-controller/internal/notifier"
	"plumb.dev/pkg/events"
)

// TestSlackAlert: an event a controller publishes reaches a Slack-shaped
// endpoint, with the payload's JSON shape asserted.
func TestSlackAlert(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	slack := newEndpoint(t)
	provider := createProvider(t, ns, "slack", notificationv1.SlackProvider, slack.URL+"/services/T0/B0/SECRET", nil)
	alert := createAlert(t, ns, "drift", "slack", func(s *notificationv1.AlertSpec) {
		s.EventMetadata = map[string]string{"cluster": "prod-eu"}
		s.Summary = "production drift"
	})
	waitReady(t, provider, metav1.ConditionTrue)
	waitReady(t, alert, metav1.ConditionTrue)
	startDispatcher(t, ns, testOptions(ns))

	repo := gitRepository(t, ns, "podinfo", nil, false)
	controllers.Record(repo, events.SeverityError, kustomizev1.DriftDetectedReason, "2 objects drifted from Git",
		events.WithRevision("main@sha1:4f3c2b1a"),
		events.WithMetadata(map[string]string{"objects": "2"}),
		events.WithChanges([]events.Change{
			{Object: "Deployment/" + ns + "/web", Path: "spec.replicas", Before: "3", After: "2"},
			{Object: "ConfigMap/" + ns + "/cfg", Path: "data.mode"},
		}))

	g.Eventually(func() int { return len(slack.requests()) }, timeout, poll).Should(Equal(1))
	req := slack.requests()[0]
	g.Expect(req.Header.Get("Content-Type")).To(Equal("application/json"))
	var got map[string]any
	g.Expect(json.Unmarshal(req.Body, &got)).To(Succeed())
	g.Expect(got).To(HaveKeyWithValue("channel", "#deploys"))
	g.Expect(got).To(HaveKeyWithValue("username", "plumb"))
	g.Expect(got["attachments"]).To(HaveLen(1))
	att := got["attachments"].([]any)[0].(map[string]any)
	g.Expect(att).To(HaveKeyWithValue("color", "danger"))
	g.Expect(att).To(HaveKeyWithValue("author_name", "gitrepository/"+ns+"/podinfo"))
	g.Expect(att).To(HaveKeyWithValue("title", kustomizev1.DriftDetectedReason))
	g.Expect(att).To(HaveKeyWithValue("text", "2 objects drifted from Git"))
	g.Expect(att).To(HaveKeyWithValue("footer", "source-controller"))
	g.Expect(att["fields"]).To(Equal([]any{
		map[string]any{"title": "Revision", "value": "main@sha1:4f3c2b1a", "short": true},
		map[string]any{"title": "Summary", "value": "production drift", "short": true},
		map[string]any{"title": "Drift", "value": "Deployment/" + ns + "/web spec.replicas\nConfigMap/" + ns + "/cfg data.mode", "short": false},
		map[string]any{"title": "cluster", "value": "prod-eu", "short": true},
		map[string]any{"title": "objects", "value": "2", "short": true},
	}))

	labels := map[string]string{"namespace": ns, "provider": "slack", "type": "slack"}
	g.Expect(counter(t, "plumb_notification_events_dispatched_total", labels)).To(Equal(1.0))
}

// TestAlertFilters: severity, inclusion and exclusion lists drop what they
// should, an identical event within the rate-limit interval is sent once,
// and sources match by name wildcard and labels.
func TestAlertFilters(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	hook := newEndpoint(t)
	provider := createProvider(t, ns, "hook", notificationv1.GenericProvider, hook.URL, nil)
	errorsOnly := createAlert(t, ns, "errors-only", "hook", func(s *notificationv1.AlertSpec) {
		s.EventSeverity = "error"
		s.EventSources = []notificationv1.CrossNamespaceObjectReference{{Kind: sourcev1.GitRepositoryKind, Name: "app-*"}}
		s.InclusionList = []string{"^fetch", "^keep"}
		s.ExclusionList = []string{"timeout"}
	})
	labelled := createAlert(t, ns, "labelled", "hook", func(s *notificationv1.AlertSpec) {
		s.EventSources = []notificationv1.CrossNamespaceObjectReference{{
			Kind: sourcev1.GitRepositoryKind, Name: "*", MatchLabels: map[string]string{"team": "web"},
		}}
		s.EventMetadata = map[string]string{"via": "labels"}
	})
	waitReady(t, provider, metav1.ConditionTrue)
	waitReady(t, errorsOnly, metav1.ConditionTrue)
	waitReady(t, labelled, metav1.ConditionTrue)
	opts := testOptions(ns)
	startDispatcher(t, ns, opts)

	app := gitRepository(t, ns, "app-one", nil, true)
	other := gitRepository(t, ns, "other", nil, true)
	web := gitRepository(t, ns, "web", map[string]string{"team": "web"}, true)

	controllers.Eventf(app, events.SeverityInfo, sourcev1.NewArtifactReason, "fetch ok")                      // info: below error
	controllers.Eventf(app, events.SeverityError, sourcev1.GitOperationFailedReason, "fetch failed: timeout") // excluded
	controllers.Eventf(app, events.SeverityError, sourcev1.GitOperationFailedReason, "clone refused")         // not included
	controllers.Eventf(other, events.SeverityError, sourcev1.GitOperationFailedReason, "fetch failed: other") // name does not match, no labels
	controllers.Eventf(app, events.SeverityError, sourcev1.GitOperationFailedReason, "fetch failed: auth")    // sent
	controllers.Eventf(app, events.SeverityError, sourcev1.GitOperationFailedReason, "fetch failed: auth")    // identical: rate-limited
	controllers.Eventf(app, events.SeverityError, sourcev1.GitOperationFailedReason, "keep this")             // sent
	controllers.Eventf(web, events.SeverityInfo, sourcev1.NewArtifactReason, "web stored")                    // labels match
	waitConsumed(t, opts.ConsumerName)

	got := hook.events(t)
	g.Expect(messagesOf(got)).To(ConsistOf("fetch failed: auth", "keep this", "web stored"))
	for _, e := range got {
		if e.Message == "web stored" {
			g.Expect(e.Metadata).To(HaveKeyWithValue("via", "labels"))
		} else {
			g.Expect(e.Metadata).NotTo(HaveKey("via"))
		}
	}
	labels := map[string]string{"namespace": ns, "provider": "hook", "type": "generic"}
	g.Expect(counter(t, "plumb_notification_events_rate_limited_total", labels)).To(Equal(1.0))
	g.Expect(counter(t, "plumb_notification_events_dispatched_total", labels)).To(Equal(3.0))

	// A suspended Alert sends nothing.
	g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(labelled), labelled)).To(Succeed())
	patch := client.MergeFrom(labelled.DeepCopy())
	labelled.Spec.Suspend = true
	// A merge patch: the controller may write the object between the Get
	// and this write.
	g.Expect(k8s.Patch(context.Background(), labelled, patch)).To(Succeed())
	waitReady(t, labelled, metav1.ConditionFalse)
	controllers.Eventf(web, events.SeverityInfo, sourcev1.NewArtifactReason, "web stored again")
	waitConsumed(t, opts.ConsumerName)
	g.Expect(hook.requests()).To(HaveLen(3))
}

// TestNATSOutage stops NATS while a controller publishes 50 events and
// starts it again: all 50 arrive at the provider exactly once, in order.
func TestNATSOutage(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	hook := newEndpoint(t)
	provider := createProvider(t, ns, "hook", notificationv1.GenericProvider, hook.URL, nil)
	alert := createAlert(t, ns, "all", "hook", nil)
	waitReady(t, provider, metav1.ConditionTrue)
	waitReady(t, alert, metav1.ConditionTrue)
	opts := testOptions(ns)
	startDispatcher(t, ns, opts)
	repo := gitRepository(t, ns, "repo", nil, false)

	env.StopNATS()
	var want []string
	for i := range 50 {
		controllers.Eventf(repo, events.SeverityInfo, "Progress", "step %02d", i)
		want = append(want, fmt.Sprintf("step %02d", i))
	}
	g.Expect(publisher.Len()).To(Equal(50), "the events wait in the publisher's queue")
	g.Expect(env.RestartNATS()).To(Succeed())

	g.Eventually(func() int { return len(hook.requests()) }, 2*timeout, poll).Should(BeNumerically(">=", 50))
	waitConsumed(t, opts.ConsumerName)
	g.Expect(messagesOf(hook.events(t))).To(Equal(want))
}

// TestRestartMidStream stops the dispatcher while it works through a
// stream of events and starts another on the same durable consumer: every
// event arrives, none twice, in order.
func TestRestartMidStream(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	hook := newEndpoint(t)
	reached := make(chan struct{})
	var once atomic.Bool
	hook.onHit = func(n int) {
		if n == 10 && once.CompareAndSwap(false, true) {
			close(reached)
		}
		// Slow enough that the stop lands mid-stream.
		time.Sleep(20 * time.Millisecond)
	}
	provider := createProvider(t, ns, "hook", notificationv1.GenericProvider, hook.URL, nil)
	alert := createAlert(t, ns, "all", "hook", nil)
	waitReady(t, provider, metav1.ConditionTrue)
	waitReady(t, alert, metav1.ConditionTrue)
	opts := testOptions(ns)
	stop := startDispatcher(t, ns, opts)
	repo := gitRepository(t, ns, "repo", nil, false)

	var want []string
	for i := range 30 {
		controllers.Eventf(repo, events.SeverityInfo, "Progress", "step %02d", i)
		want = append(want, fmt.Sprintf("step %02d", i))
	}
	g.Eventually(reached, timeout).Should(BeClosed())
	stop()
	deliveredBefore := len(hook.requests())
	g.Expect(deliveredBefore).To(BeNumerically("<", 30), "the stop came mid-stream")

	startDispatcher(t, ns, opts)
	for i := 30; i < 50; i++ {
		controllers.Eventf(repo, events.SeverityInfo, "Progress", "step %02d", i)
		want = append(want, fmt.Sprintf("step %02d", i))
	}
	waitConsumed(t, opts.ConsumerName)
	g.Expect(messagesOf(hook.events(t))).To(Equal(want))
}

// TestProviderRetries: an endpoint down then up gets the event after a
// retry; one that stays down makes the dispatcher give up with a Warning
// event on the Alert, and the next event still goes out.
func TestProviderRetries(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	flaky := newEndpoint(t)
	flaky.status = func(n int) int {
		if n <= 2 {
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	}
	var downHits atomic.Int32
	down := newEndpoint(t)
	down.status = func(n int) int {
		downHits.Store(int32(n))
		return http.StatusInternalServerError
	}
	for _, p := range []*notificationv1.Provider{
		createProvider(t, ns, "flaky", notificationv1.GenericProvider, flaky.URL, nil),
		createProvider(t, ns, "down", notificationv1.GenericProvider, down.URL, nil),
	} {
		waitReady(t, p, metav1.ConditionTrue)
	}
	waitReady(t, createAlert(t, ns, "to-flaky", "flaky", nil), metav1.ConditionTrue)
	toDown := createAlert(t, ns, "to-down", "down", nil)
	waitReady(t, toDown, metav1.ConditionTrue)
	opts := testOptions(ns) // 2 retries: 3 attempts
	startDispatcher(t, ns, opts)

	repo := gitRepository(t, ns, "repo", nil, false)
	controllers.Eventf(repo, events.SeverityError, sourcev1.GitOperationFailedReason, "first")
	waitConsumed(t, opts.ConsumerName)

	g.Expect(messagesOf(flaky.events(t))).To(Equal([]string{"first"}))
	g.Expect(flaky.requests()).To(HaveLen(3))
	g.Expect(down.requests()).To(HaveLen(3), "three attempts, then it gives up")

	g.Eventually(func(g Gomega) {
		var list corev1.EventList
		g.Expect(k8s.List(context.Background(), &list, client.InNamespace(ns))).To(Succeed())
		var warnings []string
		for _, e := range list.Items {
			if e.InvolvedObject.Kind == notificationv1.AlertKind && e.InvolvedObject.Name == "to-down" && e.Type == corev1.EventTypeWarning {
				warnings = append(warnings, e.Reason+": "+e.Message)
			}
		}
		g.Expect(warnings).To(ConsistOf(And(
			HavePrefix(notificationv1.DeliveryFailedReason+": "),
			ContainSubstring("after 3 attempts"),
			ContainSubstring("500 Internal Server Error"),
			Not(ContainSubstring(down.URL)),
		)))
	}, timeout, poll).Should(Succeed())
	labels := map[string]string{"namespace": ns, "provider": "down", "type": "generic"}
	g.Expect(counter(t, "plumb_notification_events_failed_total", labels)).To(Equal(1.0))

	// The event was acknowledged after giving up; the next one is sent.
	controllers.Eventf(repo, events.SeverityError, sourcev1.GitOperationFailedReason, "second")
	waitConsumed(t, opts.ConsumerName)
	g.Expect(messagesOf(flaky.events(t))).To(Equal([]string{"first", "second"}))

	// A client error is not retried.
	bad := newEndpoint(t)
	bad.status = func(int) int { return http.StatusBadRequest }
	p := createProvider(t, ns, "bad", notificationv1.GenericProvider, bad.URL, nil)
	waitReady(t, p, metav1.ConditionTrue)
	waitReady(t, createAlert(t, ns, "to-bad", "bad", nil), metav1.ConditionTrue)
	controllers.Eventf(repo, events.SeverityError, sourcev1.GitOperationFailedReason, "third")
	waitConsumed(t, opts.ConsumerName)
	g.Expect(bad.requests()).To(HaveLen(1))
}

// TestGenericHMACProvider: the body is signed with the token.
func TestGenericHMACProvider(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	hook := newEndpoint(t)
	p := createProvider(t, ns, "signed", notificationv1.GenericHMACProvider, hook.URL, map[string]string{
		"token":   "hmac-key",
		"headers": "X-Team: platform\n",
	})
	waitReady(t, p, metav1.ConditionTrue)
	waitReady(t, createAlert(t, ns, "all", "signed", nil), metav1.ConditionTrue)
	opts := testOptions(ns)
	startDispatcher(t, ns, opts)
	controllers.Eventf(gitRepository(t, ns, "repo", nil, false), events.SeverityInfo, sourcev1.NewArtifactReason, "stored")
	waitConsumed(t, opts.ConsumerName)

	reqs := hook.requests()
	g.Expect(reqs).To(HaveLen(1))
	g.Expect(reqs[0].Header.Get("X-Signature")).To(Equal(notifier.Sign("hmac-key", reqs[0].Body)))
	g.Expect(reqs[0].Header.Get("X-Team")).To(Equal("platform"))
	g.Expect(reqs[0].Header.Get("Authorization")).To(BeEmpty())
	e, err := events.Decode(reqs[0].Body)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(e.Message).To(Equal("stored"))
}

// TestNATSProvider: the alert is published as JSON on the provider's
// subject, for other systems to subscribe to.
func TestNATSProvider(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	nc, err := nats.Connect(env.NATSURL)
	g.Expect(err).NotTo(HaveOccurred())
	defer nc.Close()
	sub, err := nc.SubscribeSync("alerts." + ns)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(nc.Flush()).To(Succeed())

	p := &notificationv1.Provider{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bus"},
		Spec:       notificationv1.ProviderSpec{Type: notificationv1.NATSProvider, Address: env.NATSURL, Channel: "alerts." + ns},
	}
	g.Expect(k8s.Create(context.Background(), p)).To(Succeed())
	waitReady(t, p, metav1.ConditionTrue)
	waitReady(t, createAlert(t, ns, "all", "bus", func(s *notificationv1.AlertSpec) {
		s.EventMetadata = map[string]string{"env": "test"}
	}), metav1.ConditionTrue)
	opts := testOptions(ns)
	startDispatcher(t, ns, opts)
	controllers.Eventf(gitRepository(t, ns, "repo", nil, false), events.SeverityError, kustomizev1.HealthCheckFailedReason, "web is not healthy")

	msg, err := sub.NextMsg(timeout)
	g.Expect(err).NotTo(HaveOccurred())
	e, err := events.Decode(msg.Data)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(e.Reason).To(Equal(kustomizev1.HealthCheckFailedReason))
	g.Expect(e.Metadata).To(HaveKeyWithValue("env", "test"))
	g.Expect(e.InvolvedObject.Namespace).To(Equal(ns))
}

// TestInvalidEventsAreTerminated: garbage on an event subject neither
// blocks the consumer nor reaches a provider.
func TestInvalidEventsAreTerminated(t *testing.T) {
	g := NewWithT(t)
	ns, hook := hookForEverything(t)
	opts := testOptions(ns)
	startDispatcher(t, ns, opts)

	nc, err := nats.Connect(env.NATSURL)
	g.Expect(err).NotTo(HaveOccurred())
	defer nc.Close()
	_, err = nc.Request(events.Subject("GitRepository", ns, "repo"), []byte(`{"not":"an event"}`), 5*time.Second)
	g.Expect(err).NotTo(HaveOccurred())
	controllers.Eventf(gitRepository(t, ns, "repo", nil, false), events.SeverityInfo, sourcev1.NewArtifactReason, "valid")
	waitConsumed(t, opts.ConsumerName)
	g.Expect(messagesOf(hook.events(t))).To(Equal([]string{"valid"}))
}

// counter reads a counter of controller-runtime's registry.
func counter(t *testing.T, name string, labels map[string]string) float64 {
	t.Helper()
	return metricValue(t, name, labels, 0, func(m *dto.Metric) float64 { return m.GetCounter().GetValue() })
}

// gauge is the value of the gauge name with labels in controller-runtime's
// registry; -2 when there is none, so that an absent series never reads
// as a value.
func gauge(t *testing.T, name string, labels map[string]string) float64 {
	t.Helper()
	return metricValue(t, name, labels, -2, func(m *dto.Metric) float64 { return m.GetGauge().GetValue() })
}

// metricValue is value of the series name with labels, or missing.
func metricValue(t *testing.T, name string, labels map[string]string, missing float64, value func(*dto.Metric) float64) float64 {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	next:
		for _, m := range f.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if have[k] != v {
					continue next
				}
			}
			return value(m)
		}
	}
	return missing
}
