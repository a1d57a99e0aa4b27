package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	. "github.com/onsi/gomega"
	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"plumb.dev/api/meta"
	notificationv1 "plumb.dev/api/notification/v1"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/notification-controller/internal/config"
	"plumb.dev/notification-controller/internal/dispatch"
	"plumb.dev/notification-controller/internal/notifier"
	"plumb.dev/notification-controller/internal/receiver"
	"plumb.dev/pkg/app"
	"plumb.dev/pkg/events"
	"plumb.dev/pkg/options"
	"plumb.dev/pkg/testenv"
)

// Shared by every test of the package: one control plane and NATS, one
// manager running the three reconcilers, one receiver server, and a
// publisher standing in for the other controllers. Each test starts its own
// Dispatcher, with a durable consumer of its own that reads only its
// namespace's events, so tests do not see each other's alerts.
var (
	env         *testenv.Environment
	k8s         client.Client
	mgr         ctrl.Manager
	natsOpt     options.NATS
	publisher   *events.JetStreamPublisher
	controllers *events.Recorder // publishes as source-controller would
	recorder    *events.Recorder // notification-controller's own
	receiverURL string
	tokens      *receiver.Tokens // the suite's receiver server's
	// deliveryMetrics is the one set every test's Dispatcher records
	// into, in controller-runtime's registry as in the binary.
	deliveryMetrics = dispatch.NewMetrics(ctrlmetrics.Registry)
	// objectMetrics are the reconcilers' per-object metrics.
	objectMetrics = NewMetrics(ctrlmetrics.Registry)
)

// suiteOptions are the options the suite's manager and receiver server run
// with: cross-namespace references refused, as deploy/ sets it, Secrets
// read again every two seconds, and a rate limit no test reaches by
// accident.
var suiteOptions = config.Notification{
	NoCrossNamespaceRefs:   true,
	SecretRefreshInterval:  2 * time.Second,
	MaxProviderTimeout:     time.Minute,
	AllowPrivateAddresses:  true,
	AllowLoopbackAddresses: true,
	ReceiverRate:           1000,
	ReceiverBurst:          1000,
	ReceiverMaxConcurrent:  64,
	ReceiverMaxShare:       0.25,
	ReceiverBodyTimeout:    5 * time.Second,
	// Never fetched: no suite test posts a gcr call with a token.
	GCRIssuer:  "https://accounts.google.com",
	GCRJWKSURL: "https://www.googleapis.com/oauth2/v3/certs",
}

const (
	timeout = 30 * time.Second
	poll    = 100 * time.Millisecond
)

func TestMain(m *testing.M) {
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) int {
	ctrl.SetLogger(logr.Discard())
	var err error
	if env, err = testenv.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer env.Stop()
	k8s = env.Client

	mgrOpts := options.Manager{MetricsAddr: "0", HealthAddr: "0", Concurrent: 4}
	if mgr, err = app.NewManager(dispatch.ControllerName, env.Config, env.Scheme, mgrOpts); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	natsOpt = options.NATS{URL: env.NATSURL, Stream: "PLUMB_EVENTS", StreamMaxAge: time.Hour, StreamMaxBytes: 64 << 20, QueueSize: 1000}
	if publisher, err = events.NewJetStreamPublisher(natsOpt, "source-controller", logr.Discard()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	controllers = events.NewRecorder(nil, publisher, env.Scheme, "source-controller")
	own, err := events.NewJetStreamPublisher(natsOpt, dispatch.ControllerName, logr.Discard())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	recorder = events.NewRecorder(mgr.GetEventRecorder(dispatch.ControllerName), own, env.Scheme, dispatch.ControllerName)

	copts := controller.Options{MaxConcurrentReconciles: 4}
	o := suiteOptions
	tokens = &receiver.Tokens{Rate: rate.Limit(o.ReceiverRate), Burst: o.ReceiverBurst}
	for _, setup := range []func() error{
		func() error {
			return (&ProviderReconciler{
				Client: mgr.GetClient(), Reader: mgr.GetAPIReader(),
				Policy:     notifier.AddressPolicy{AllowPrivate: o.AllowPrivateAddresses, AllowLoopback: o.AllowLoopbackAddresses},
				MaxTimeout: o.MaxProviderTimeout, SecretRefreshInterval: o.SecretRefreshInterval,
				Metrics: objectMetrics,
			}).SetupWithManager(mgr, copts)
		},
		func() error {
			return (&AlertReconciler{Client: mgr.GetClient(), NoCrossNamespaceRefs: o.NoCrossNamespaceRefs, Metrics: objectMetrics}).SetupWithManager(mgr, copts)
		},
		func() error {
			return (&ReceiverReconciler{
				Client: mgr.GetClient(), Reader: mgr.GetAPIReader(),
				NoCrossNamespaceRefs: o.NoCrossNamespaceRefs, SecretRefreshInterval: o.SecretRefreshInterval,
				Metrics: objectMetrics,
			}).SetupWithManager(mgr, copts)
		},
		func() error {
			return (&receiver.TokenLoader{
				Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Tokens: tokens, RefreshInterval: o.SecretRefreshInterval,
			}).SetupWithManager(mgr)
		},
	} {
		if err := setup(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	receiverURL = "http://" + l.Addr().String()
	srv := &receiver.Server{
		Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Tokens: tokens,
		Verifier: receiver.Verifier{
			IDTokens: receiver.NewIDTokens(o.GCRIssuer, o.GCRJWKSURL),
			// The suite's stand-in issuers listen on 127.0.0.1, which
			// the suite's policy allows, as deploy/ does not.
			OIDC: receiver.NewOIDCTokens(notifier.NewHTTPClient(
				notifier.AddressPolicy{AllowPrivate: o.AllowPrivateAddresses, AllowLoopback: o.AllowLoopbackAddresses}, 10*time.Second)),
		},
		MaxConcurrent: o.ReceiverMaxConcurrent, NoCrossNamespaceRefs: o.NoCrossNamespaceRefs,
		Events: recorder, Log: logr.Discard(),
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 2)
	go func() { done <- mgr.Start(ctx) }()
	go func() { done <- srv.Serve(ctx, l) }()
	defer func() {
		cancel()
		<-done
		<-done
		closeCtx, c := context.WithTimeout(context.Background(), 5*time.Second)
		defer c()
		_ = publisher.Close(closeCtx)
		_ = own.Close(closeCtx)
	}()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		fmt.Fprintln(os.Stderr, "the manager's cache did not sync")
		return 1
	}
	return m.Run()
}

// --- helpers ---

func newNamespace(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	ns, err := env.Namespace(ctx, "notif")
	if err != nil {
		t.Fatal(err)
	}
	return ns
}

// testOptions are delivery options with short retries. Loopback
// addresses are allowed, explicitly: the stand-ins for Slack and webhooks
// listen on 127.0.0.1, which the default policy refuses.
func testOptions(ns string) config.Notification {
	o := suiteOptions
	o.ConsumerName = "test-" + ns
	o.AckWait = 30 * time.Second
	o.Retries = 2
	o.RetryBackoff = 20 * time.Millisecond
	o.MaxRetryBackoff = 100 * time.Millisecond
	o.Workers = 4
	o.RateLimitInterval = time.Minute
	return o
}

// startDispatcher runs a Dispatcher reading the events of namespace ns and
// waits until its consumer exists (it starts with new events). The returned
// stop function ends it and waits for it; it also runs at cleanup.
func startDispatcher(t testing.TB, ns string, opts config.Notification) (stop func()) {
	t.Helper()
	return runDispatcher(t, newDispatcher(opts, ns))
}

// newDispatcher returns a Dispatcher reading the events of the namespaces.
func newDispatcher(opts config.Notification, namespaces ...string) *dispatch.Dispatcher {
	d := &dispatch.Dispatcher{
		Metrics: deliveryMetrics,
		NATS:    natsOpt,
		Options: opts,
		Client:  mgr.GetClient(),
		Reader:  mgr.GetAPIReader(),
		Events:  recorder,
		Log:     logr.Discard(),
	}
	for _, ns := range namespaces {
		d.FilterSubjects = append(d.FilterSubjects, events.SubjectPrefix+".*."+ns+".*")
	}
	return d
}

// runDispatcher starts d and waits until its consumer exists; see
// startDispatcher.
func runDispatcher(t testing.TB, d *dispatch.Dispatcher) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Start(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("dispatcher: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	NewWithT(t).Eventually(func() error {
		_, err := consumerInfo(d.Options.ConsumerName)
		return err
	}, timeout, poll).Should(Succeed(), "the dispatcher creates its consumer")
	return stop
}

func consumerInfo(name string) (*jetstream.ConsumerInfo, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	nc, err := nats.Connect(env.NATSURL)
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	c, err := js.Consumer(ctx, natsOpt.Stream, name)
	if err != nil {
		return nil, err
	}
	return c.Info(ctx)
}

// waitConsumed waits until every event published so far is stored and
// acknowledged by the consumer: whatever was to be delivered has been.
func waitConsumed(t testing.TB, consumer string) {
	t.Helper()
	g := NewWithT(t)
	g.Eventually(publisher.Len, timeout, poll).Should(BeZero(), "events stored")
	g.Eventually(func(g Gomega) {
		info, err := consumerInfo(consumer)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(info.NumPending).To(BeZero())
		g.Expect(info.NumAckPending).To(BeZero())
	}, timeout, poll).Should(Succeed(), "events consumed")
}

// endpoint is an httptest server standing in for Slack or a webhook. It
// records every request; status picks the answer to the n-th (from 1).
type endpoint struct {
	*httptest.Server
	mu     sync.Mutex
	reqs   []*capturedRequest
	status func(n int) int
	onHit  func(n int)
}

type capturedRequest struct {
	Header http.Header
	Body   []byte
}

func newEndpoint(t testing.TB) *endpoint {
	e := &endpoint{}
	e.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		e.mu.Lock()
		e.reqs = append(e.reqs, &capturedRequest{Header: r.Header.Clone(), Body: body})
		n := len(e.reqs)
		status, onHit := e.status, e.onHit
		e.mu.Unlock()
		if onHit != nil {
			onHit(n)
		}
		code := http.StatusOK
		if status != nil {
			code = status(n)
		}
		w.WriteHeader(code)
	}))
	t.Cleanup(e.Close)
	return e
}

func (e *endpoint) requests() []*capturedRequest {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]*capturedRequest(nil), e.reqs...)
}

// accepted returns the bodies of the requests answered 2xx, decoded as
// generic event JSON.
func (e *endpoint) events(t testing.TB) []events.Event {
	t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []events.Event
	for i, r := range e.reqs {
		if e.status != nil && e.status(i+1) >= 300 {
			continue
		}
		var ev events.Event
		if err := json.Unmarshal(r.Body, &ev); err != nil {
			t.Fatalf("request %d is not event JSON: %v", i+1, err)
		}
		out = append(out, ev)
	}
	return out
}

func messagesOf(evs []events.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Message
	}
	return out
}

func createSecret(t testing.TB, ns, name string, data map[string]string) *corev1.Secret {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, StringData: data}
	NewWithT(t).Expect(k8s.Create(context.Background(), s)).To(Succeed())
	return s
}

// createProvider creates a Provider whose address is in a Secret. The
// stand-in endpoints speak plain http://, so it sets spec.insecure.
func createProvider(t testing.TB, ns, name, typ, address string, extra map[string]string) *notificationv1.Provider {
	t.Helper()
	data := map[string]string{"address": address}
	for k, v := range extra {
		data[k] = v
	}
	createSecret(t, ns, name+"-secret", data)
	p := &notificationv1.Provider{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: notificationv1.ProviderSpec{
			Type:      typ,
			Channel:   "#deploys",
			Username:  "plumb",
			Timeout:   &metav1.Duration{Duration: 5 * time.Second},
			SecretRef: &meta.LocalObjectReference{Name: name + "-secret"},
			Insecure:  true,
		},
	}
	NewWithT(t).Expect(k8s.Create(context.Background(), p)).To(Succeed())
	return p
}

func createAlert(t testing.TB, ns, name, provider string, mutate func(*notificationv1.AlertSpec)) *notificationv1.Alert {
	t.Helper()
	a := &notificationv1.Alert{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: notificationv1.AlertSpec{
			ProviderRef:   meta.LocalObjectReference{Name: provider},
			EventSeverity: "info",
			EventSources:  []notificationv1.CrossNamespaceObjectReference{{Kind: sourcev1.GitRepositoryKind, Name: "*"}},
		},
	}
	if mutate != nil {
		mutate(&a.Spec)
	}
	NewWithT(t).Expect(k8s.Create(context.Background(), a)).To(Succeed())
	return a
}

// ready waits for obj's Ready condition to have the given status and
// returns the condition.
func waitReady(t testing.TB, obj client.Object, status metav1.ConditionStatus) *metav1.Condition {
	t.Helper()
	var cond *metav1.Condition
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)).To(Succeed())
		cond = readyOf(obj)
		g.Expect(cond).NotTo(BeNil())
		g.Expect(cond.Status).To(Equal(status), "Ready message: %s", cond.Message)
		g.Expect(cond.ObservedGeneration).To(Equal(obj.GetGeneration()))
	}, timeout, poll).Should(Succeed())
	return cond
}

func readyOf(obj client.Object) *metav1.Condition {
	var conds []metav1.Condition
	switch o := obj.(type) {
	case *notificationv1.Provider:
		conds = o.Status.Conditions
	case *notificationv1.Alert:
		conds = o.Status.Conditions
	case *notificationv1.Receiver:
		conds = o.Status.Conditions
	}
	for i := range conds {
		if conds[i].Type == meta.ReadyCondition {
			return &conds[i]
		}
	}
	return nil
}

// gitRepository returns an object for the recorder to report about; it
// is created in the API server only when create is true.
func gitRepository(t testing.TB, ns, name string, labels map[string]string, create bool) *sourcev1.GitRepository {
	t.Helper()
	r := &sourcev1.GitRepository{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: sourcev1.GitRepositorySpec{
			URL:      "https://git.example.com/" + name,
			Interval: metav1.Duration{Duration: time.Hour},
		},
	}
	if create {
		NewWithT(t).Expect(k8s.Create(context.Background(), r)).To(Succeed())
	}
	return r
}
