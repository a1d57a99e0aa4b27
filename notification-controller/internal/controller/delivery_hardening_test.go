package controller

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	notificationv1 "plumb.dev/api/notification/v1"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/notification-controller/internal/config"
	"plumb.dev/notification-controller/internal/dispatch"
	"plumb.dev/notification-controller/internal/notifier"
	"plumb.dev/pkg/events"
)

// warnings returns "Reason: message" of the Warning events on an Alert.
func warnings(g Gomega, ns, alert string) []string {
	var list corev1.EventList
	g.Expect(k8s.List(context.Background(), &list, client.InNamespace(ns))).To(Succeed())
	var out []string
	for _, e := range list.Items {
		if e.InvolvedObject.Kind == notificationv1.AlertKind && e.InvolvedObject.Name == alert && e.Type == corev1.EventTypeWarning {
			out = append(out, e.Reason+": "+e.Message)
		}
	}
	return out
}

// TestSlowProviderDelaysNoOther: a Provider whose endpoint does not answer
// holds its own queue only. While its first request hangs (its timeout is
// a minute), a second Provider receives every event, in order.
func TestSlowProviderDelaysNoOther(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	release := make(chan struct{})
	var slowHits atomic.Int32
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		slowHits.Add(1)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(slow.Close)
	fast := newEndpoint(t)

	sp := createProvider(t, ns, "slow", notificationv1.GenericProvider, slow.URL, nil)
	patch := client.MergeFrom(sp.DeepCopy())
	sp.Spec.Timeout = &metav1.Duration{Duration: time.Minute}
	g.Expect(k8s.Patch(context.Background(), sp, patch)).To(Succeed())
	waitReady(t, sp, metav1.ConditionTrue)
	waitReady(t, createProvider(t, ns, "fast", notificationv1.GenericProvider, fast.URL, nil), metav1.ConditionTrue)
	waitReady(t, createAlert(t, ns, "to-slow", "slow", nil), metav1.ConditionTrue)
	waitReady(t, createAlert(t, ns, "to-fast", "fast", nil), metav1.ConditionTrue)
	opts := testOptions(ns)
	opts.Workers = 1 // one routing worker: only the queues can keep them apart
	startDispatcher(t, ns, opts)

	repo := gitRepository(t, ns, "repo", nil, false)
	var want []string
	for i := range 10 {
		controllers.Eventf(repo, events.SeverityInfo, "Progress", "step %d", i)
		want = append(want, fmt.Sprintf("step %d", i))
	}
	g.Eventually(func() []string { return messagesOf(fast.events(t)) }, timeout, poll).Should(Equal(want))
	g.Expect(slowHits.Load()).To(Equal(int32(1)), "the slow endpoint still holds the first event")
	// Let the slow endpoint answer: a request in flight runs to its
	// timeout even when the dispatcher stops.
	close(release)
}

// TestProviderTimeoutIsCapped: a Provider's spec.timeout of ten minutes is
// cut to --max-provider-timeout: the Ready message says so, and a delivery
// to an endpoint that never answers gives up (no retries here) instead of
// holding its queue for ten minutes.
func TestProviderTimeoutIsCapped(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	release := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(hang.Close)
	t.Cleanup(func() { close(release) })
	p := createProvider(t, ns, "hang", notificationv1.GenericProvider, hang.URL, nil)
	patch := client.MergeFrom(p.DeepCopy())
	p.Spec.Timeout = &metav1.Duration{Duration: 10 * time.Minute}
	g.Expect(k8s.Patch(context.Background(), p, patch)).To(Succeed())
	// Eventually, not waitReady: the patch helper stamps a condition with
	// the generation it finds on the server, so the message written from
	// the first generation can carry the second one's number for a moment.
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(p), p)).To(Succeed())
		g.Expect(readyOf(p)).NotTo(BeNil())
		g.Expect(readyOf(p).Message).To(Equal("generic provider is ready; spec.timeout 10m0s is above --max-provider-timeout, deliveries stop after 1m0s"))
	}, timeout, poll).Should(Succeed())
	waitReady(t, createAlert(t, ns, "to-hang", "hang", nil), metav1.ConditionTrue)

	opts := testOptions(ns)
	opts.MaxProviderTimeout = time.Second
	deliverOnce(t, ns, opts)
	g.Eventually(func(g Gomega) {
		g.Expect(warnings(g, ns, "to-hang")).To(ConsistOf(And(
			HavePrefix(notificationv1.DeliveryFailedReason+": "), ContainSubstring("after 1 attempts"))))
	}, timeout, poll).Should(Succeed())
	g.Expect(dispatch.Timeout(p, time.Second)).To(Equal(time.Second))
	g.Expect(dispatch.Timeout(p, time.Hour)).To(Equal(10 * time.Minute))
}

// TestDeliveryRefusals: what an endpoint answers never reaches an event
// (status code only), a redirect is not followed, and a link-local
// (metadata) address in the spec makes the Provider itself Ready=False.
func TestDeliveryRefusals(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	target, stolen := countingServer(t)
	chatty := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "SECRET-BODY token=abc", http.StatusBadRequest)
	}))
	t.Cleanup(chatty.Close)
	redirect := httptest.NewServer(http.RedirectHandler(target.URL+"/collect", http.StatusTemporaryRedirect))
	t.Cleanup(redirect.Close)
	for name, url := range map[string]string{"chatty": chatty.URL, "redirect": redirect.URL} {
		waitReady(t, createProvider(t, ns, name, notificationv1.GenericProvider, url, nil), metav1.ConditionTrue)
		waitReady(t, createAlert(t, ns, "to-"+name, name, nil), metav1.ConditionTrue)
	}

	metadata := &notificationv1.Provider{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "metadata"},
		Spec:       notificationv1.ProviderSpec{Type: notificationv1.GenericProvider, Address: "http://169.254.169.254/latest/meta-data/"},
	}
	g.Expect(k8s.Create(context.Background(), metadata)).To(Succeed())
	cond := waitReady(t, metadata, metav1.ConditionFalse)
	g.Expect(cond.Reason).To(Equal(notificationv1.AddressRefusedReason))
	g.Expect(cond.Message).To(Equal("address 169.254.169.254 refused: link-local (cloud metadata)"))

	opts := testOptions(ns)
	deliverOnce(t, ns, opts)
	g.Eventually(func(g Gomega) {
		g.Expect(warnings(g, ns, "to-chatty")).To(ConsistOf(HaveSuffix("after 1 attempts: the generic endpoint answered 400 Bad Request")))
		g.Expect(warnings(g, ns, "to-redirect")).To(ConsistOf(HaveSuffix("after 1 attempts: the generic endpoint answered 307 Temporary Redirect")))
	}, timeout, poll).Should(Succeed())
	g.Expect(stolen.Load()).To(BeZero(), "the redirect was not followed")
}

// TestLoopbackIsRefusedAtDialTime: with the default policy, a host name
// that passes every check before the dial ("localhost") is refused once it
// resolves to a loopback address, and the endpoint gets nothing.
func TestLoopbackIsRefusedAtDialTime(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	loop, hits := countingServer(t)
	waitReady(t, createProvider(t, ns, "localhost", notificationv1.GenericProvider,
		strings.Replace(loop.URL, "127.0.0.1", "localhost", 1), nil), metav1.ConditionTrue)
	waitReady(t, createAlert(t, ns, "to-localhost", "localhost", nil), metav1.ConditionTrue)

	opts := testOptions(ns)
	opts.AllowLoopbackAddresses = false // the default
	deliverOnce(t, ns, opts)
	g.Eventually(func(g Gomega) {
		g.Expect(warnings(g, ns, "to-localhost")).To(ConsistOf(And(
			ContainSubstring("after 1 attempts"),
			ContainSubstring("refused: loopback (--allow-loopback-provider-addresses allows it)"))))
	}, timeout, poll).Should(Succeed())
	g.Expect(hits.Load()).To(BeZero(), "the loopback endpoint got nothing")
}

// TestCredentialsNeedTLSOrInsecure: a Provider with a Secret sends its
// credentials only over TLS, unless spec.insecure says otherwise: an
// http:// address is Ready=False (InsecureConnectionsDisallowed), and a
// nats:// server without TLS is refused at connect time.
func TestCredentialsNeedTLSOrInsecure(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	hook := newEndpoint(t)
	createSecret(t, ns, "creds", map[string]string{"address": hook.URL, "token": "bearer"})
	p := &notificationv1.Provider{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "plain"},
		Spec:       notificationv1.ProviderSpec{Type: notificationv1.GenericProvider, SecretRef: &meta.LocalObjectReference{Name: "creds"}},
	}
	g.Expect(k8s.Create(ctx, p)).To(Succeed())
	cond := waitReady(t, p, metav1.ConditionFalse)
	g.Expect(cond.Reason).To(Equal(meta.InsecureConnectionsDisallowedReason))
	g.Expect(cond.Message).To(Equal("the generic provider has credentials (spec.secretRef, or user info in the address) and a plain http:// address: use https://, or set spec.insecure: true to send them unencrypted"))
	g.Expect(cond.Message).NotTo(ContainSubstring(hook.URL))

	// User info in spec.address is a credential too.
	userinfo := &notificationv1.Provider{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "userinfo"},
		Spec:       notificationv1.ProviderSpec{Type: notificationv1.GenericProvider, Address: strings.Replace(hook.URL, "http://", "http://bot:pw@", 1)},
	}
	g.Expect(k8s.Create(ctx, userinfo)).To(Succeed())
	g.Expect(waitReady(t, userinfo, metav1.ConditionFalse).Reason).To(Equal(meta.InsecureConnectionsDisallowedReason))

	patch := client.MergeFrom(p.DeepCopy())
	p.Spec.Insecure = true
	g.Expect(k8s.Patch(ctx, p, patch)).To(Succeed())
	waitReady(t, p, metav1.ConditionTrue)

	// NATS: a token goes to the server only over TLS; the test server has
	// none, so the delivery fails until spec.insecure is set.
	createSecret(t, ns, "nats-creds", map[string]string{"token": "nats-token"})
	bus := &notificationv1.Provider{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bus"},
		Spec: notificationv1.ProviderSpec{Type: notificationv1.NATSProvider, Address: env.NATSURL, Channel: "alerts." + ns,
			SecretRef: &meta.LocalObjectReference{Name: "nats-creds"}},
	}
	g.Expect(k8s.Create(ctx, bus)).To(Succeed())
	waitReady(t, bus, metav1.ConditionTrue)
	waitReady(t, createAlert(t, ns, "to-bus", "bus", nil), metav1.ConditionTrue)
	opts := testOptions(ns)
	deliverOnce(t, ns, opts)
	g.Eventually(func(g Gomega) {
		g.Expect(warnings(g, ns, "to-bus")).To(ConsistOf(And(
			ContainSubstring("connecting to the nats provider's server"), ContainSubstring("secure connection"))))
	}, timeout, poll).Should(Succeed())
}

// TestAlertNeverSeesOtherNamespaces: under --no-cross-namespace-refs an
// Alert whose sources name another namespace, or every namespace, is
// Ready=False (CrossNamespaceRef), and the dispatcher, reading both
// namespaces' events, delivers it only its own namespace's.
func TestAlertNeverSeesOtherNamespaces(t *testing.T) {
	g := NewWithT(t)
	a, b := newNamespace(t), newNamespace(t)
	hook := newEndpoint(t)
	waitReady(t, createProvider(t, a, "hook", notificationv1.GenericProvider, hook.URL, nil), metav1.ConditionTrue)
	alert := createAlert(t, a, "greedy", "hook", func(s *notificationv1.AlertSpec) {
		s.EventSources = []notificationv1.CrossNamespaceObjectReference{
			{Kind: sourcev1.GitRepositoryKind, Name: "*", Namespace: "*"},
			{Kind: sourcev1.GitRepositoryKind, Name: "*", Namespace: b},
			{Kind: kustomizev1.KustomizationKind, Name: "*"},
		}
	})
	cond := waitReady(t, alert, metav1.ConditionFalse)
	g.Expect(cond.Reason).To(Equal(notificationv1.CrossNamespaceRefReason))
	g.Expect(cond.Message).To(Equal(`cross-namespace references are not allowed: spec.eventSources[0] names namespace "*", outside ` + a))

	opts := testOptions(a)
	runDispatcher(t, newDispatcher(opts, a, b))
	controllers.Eventf(gitRepository(t, b, "theirs", nil, false), events.SeverityError, sourcev1.GitOperationFailedReason, "b's repository")
	controllers.Eventf(gitRepository(t, a, "mine", nil, false), events.SeverityError, sourcev1.GitOperationFailedReason, "a's repository")
	ks := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: a, Name: "app"}}
	controllers.Eventf(ks, events.SeverityError, kustomizev1.HealthCheckFailedReason, "a's kustomization")
	waitConsumed(t, opts.ConsumerName)
	g.Expect(messagesOf(hook.events(t))).To(Equal([]string{"a's kustomization"}))
}

// TestDeliveryPanicIsRecovered: a panic while delivering (here in the HTTP
// transport) gives that delivery up with a Warning on the Alert and a
// count, and the next event is delivered.
func TestDeliveryPanicIsRecovered(t *testing.T) {
	g := NewWithT(t)
	ns, hook := hookForEverything(t)
	opts := testOptions(ns)
	d := newDispatcher(opts, ns)
	client := notifier.NewHTTPClient(notifier.AddressPolicy{AllowLoopback: true}, time.Minute)
	var calls atomic.Int32
	inner := client.Transport
	client.Transport = roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if calls.Add(1) == 1 {
			panic("boom")
		}
		return inner.RoundTrip(r)
	})
	d.HTTPClient = client
	runDispatcher(t, d)
	before := counter(t, "plumb_panics_recovered_total", map[string]string{"where": "alert delivery"})

	firstFailsSecondArrives(t, ns, opts.ConsumerName, hook)
	g.Expect(counter(t, "plumb_panics_recovered_total", map[string]string{"where": "alert delivery"})).To(Equal(before + 1))
	g.Eventually(func(g Gomega) {
		g.Expect(warnings(g, ns, "all")).To(ConsistOf(HaveSuffix("delivery failed on an internal error (a panic, reported in notification-controller's log)")))
	}, timeout, poll).Should(Succeed())
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// panickyClient panics on its first List, as a bug tripped by one event's
// content would.
type panickyClient struct {
	client.Client
	lists atomic.Int32
}

func (c *panickyClient) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if c.lists.Add(1) == 1 {
		panic("boom")
	}
	return c.Client.List(ctx, list, opts...)
}

// TestMatchPanicIsRecovered: a panic while matching an event drops that
// event (terminated, so it is not delivered again to panic again), is
// counted, and the consumer goes on with the next event.
func TestMatchPanicIsRecovered(t *testing.T) {
	g := NewWithT(t)
	ns, hook := hookForEverything(t)
	opts := testOptions(ns)
	d := newDispatcher(opts, ns)
	d.Client = &panickyClient{Client: d.Client}
	runDispatcher(t, d)
	before := counter(t, "plumb_panics_recovered_total", map[string]string{"where": "event match"})

	firstFailsSecondArrives(t, ns, opts.ConsumerName, hook)
	g.Expect(counter(t, "plumb_panics_recovered_total", map[string]string{"where": "event match"})).To(Equal(before + 1))
}

// hookForEverything makes a namespace with a generic endpoint, its
// Provider "hook" and an Alert "all" for every GitRepository, both Ready.
func hookForEverything(t *testing.T) (string, *endpoint) {
	t.Helper()
	ns := newNamespace(t)
	hook := newEndpoint(t)
	waitReady(t, createProvider(t, ns, "hook", notificationv1.GenericProvider, hook.URL, nil), metav1.ConditionTrue)
	waitReady(t, createAlert(t, ns, "all", "hook", nil), metav1.ConditionTrue)
	return ns, hook
}

// firstFailsSecondArrives publishes two events, each consumed before the
// next, and expects the endpoint to have received only the second.
func firstFailsSecondArrives(t *testing.T, ns, consumer string, hook *endpoint) {
	t.Helper()
	repo := gitRepository(t, ns, "repo", nil, false)
	controllers.Eventf(repo, events.SeverityError, sourcev1.GitOperationFailedReason, "first")
	waitConsumed(t, consumer)
	controllers.Eventf(repo, events.SeverityError, sourcev1.GitOperationFailedReason, "second")
	waitConsumed(t, consumer)
	NewWithT(t).Expect(messagesOf(hook.events(t))).To(Equal([]string{"second"}))
}

// deliverOnce runs a dispatcher for ns without retries, publishes one
// error event about a GitRepository and waits until it is consumed.
func deliverOnce(t *testing.T, ns string, opts config.Notification) {
	t.Helper()
	opts.Retries = 0
	startDispatcher(t, ns, opts)
	controllers.Eventf(gitRepository(t, ns, "repo", nil, false), events.SeverityError, sourcev1.GitOperationFailedReason, "first")
	waitConsumed(t, opts.ConsumerName)
}

// countingServer is an endpoint that only counts the requests it gets.
func countingServer(t *testing.T) (*httptest.Server, *atomic.Int32) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	t.Cleanup(srv.Close)
	return srv, &hits
}
