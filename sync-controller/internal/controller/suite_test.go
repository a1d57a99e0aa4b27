package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	"github.com/go-logr/logr"
	"github.com/nats-io/nats.go"
	. "github.com/onsi/gomega"
	"go.uber.org/zap/zapcore"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	"plumb.dev/pkg/events"
	"plumb.dev/pkg/fetch"
	"plumb.dev/pkg/options"
	"plumb.dev/pkg/reconcile"
	"plumb.dev/pkg/testenv"
	"plumb.dev/sync-controller/internal/engine"
	"plumb.dev/sync-controller/internal/fight"
	"plumb.dev/sync-controller/internal/target"
)

var (
	env       *testenv.Environment
	artifacts *artifactServer
	requests  = &testenv.Requests{}
	// stopController stops the running sync-controller; tests that restart
	// it replace it.
	stopController func()
	// controllerMu serializes tests that stop and start the controller.
	controllerMu sync.Mutex
	// running is the Kustomization reconciler startController started
	// last, for tests that look at what it keeps in memory.
	running *KustomizationReconciler
	// runningReadyz are the readiness checks the running controller
	// registered, which /readyz runs in production (HealthProbeBindAddress
	// is off here).
	runningReadyz *readyzChecks
)

func TestMain(m *testing.M) {
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapLevel())))
	var err error
	if env, err = testenv.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	artifacts = newArtifactServer()
	stopController = startController()
	code := m.Run()
	stopController()
	artifacts.Close()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(code)
}

// zapLevel logs debug output only when PLUMB_TEST_DEBUG is set.
func zapLevel() zapcore.Level {
	if os.Getenv("PLUMB_TEST_DEBUG") != "" {
		return zapcore.DebugLevel
	}
	return zapcore.ErrorLevel
}

// startController runs sync-controller in this process against the test
// environment, with requests counted, and returns its stop function. The
// options change the reconciler before it starts, as flags would.
func startController(configure ...func(*KustomizationReconciler)) func() {
	cfg := rest.CopyConfig(env.Config)
	cfg.WrapTransport = requests.Wrap
	cfg.QPS, cfg.Burst = -1, -1
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 env.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// The controller is restarted within this process by some tests.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	must(err)
	watcher, err := engine.NewWatcher(cfg, env.Scheme, mgr.GetRESTMapper(), 50*time.Millisecond, logr.Discard())
	must(err)
	must(mgr.Add(watcher))
	helmWatcher, err := engine.NewWatcherFor(helmv2.HelmReleaseKind, cfg, env.Scheme, mgr.GetRESTMapper(), 50*time.Millisecond, logr.Discard())
	must(err)
	must(mgr.Add(helmWatcher))
	publisher, err := events.NewJetStreamPublisher(options.NATS{
		URL: env.NATSURL, Stream: "PLUMB_EVENTS", StreamMaxAge: time.Hour, StreamMaxBytes: 64 << 20, QueueSize: 1000,
	}, ControllerName, logr.Discard())
	must(err)
	engine.HealthPollFallback = 500 * time.Millisecond
	// Kubernetes Events go to the API server, as in main.go, so that tests
	// count them (requests_test.go).
	r := &KustomizationReconciler{Syncer: Syncer{
		Client:            mgr.GetClient(),
		Reader:            mgr.GetAPIReader(),
		Engine:            engine.New(mgr.GetClient(), mgr.GetRESTMapper(), watcher, 8),
		Events:            events.NewRecorder(mgr.GetEventRecorder(ControllerName), publisher, env.Scheme, ControllerName),
		Fetch:             fetch.Options{Backoff: 10 * time.Millisecond},
		DependencyRequeue: time.Second,
		DeleteHookPoll:    200 * time.Millisecond,
		Clients:           target.NewClients(cfg, env.Scheme, mgr.GetRESTMapper()),
		// Shorter than main.go's 30 s so a fight's end is seen sooner;
		// still far longer than any test's gap between a foreign write and
		// its repeat.
		Fight: fight.Options{Window: 3 * time.Second},
		// The remote clusters of the tests are control planes on
		// 127.0.0.1.
		AllowLoopbackKubeConfigServers: true,
		// Sync windows are evaluated at the tests' clock (syncwindow_test.go).
		Clock: windowClock.Now,
	},
	}
	for _, c := range configure {
		c(r)
	}
	running = r
	// The HelmRelease reconciler shares the settings, with an engine of
	// its own over its own watcher, as in main.go.
	hr := &HelmReleaseReconciler{Syncer: Syncer{
		Client: r.Client, Reader: r.Reader, Events: r.Events, Fetch: r.Fetch, Metrics: r.Metrics,
		Engine:            engine.New(mgr.GetClient(), mgr.GetRESTMapper(), helmWatcher, 8),
		DependencyRequeue: r.DependencyRequeue, DeleteHookPoll: r.DeleteHookPoll, Clients: r.Clients, Fight: r.Fight,
		DefaultServiceAccount: r.DefaultServiceAccount, NoCrossNamespaceRefs: r.NoCrossNamespaceRefs, PruneGuard: r.PruneGuard,
		AllowLoopbackKubeConfigServers: r.AllowLoopbackKubeConfigServers, Shard: r.Shard, Clock: r.Clock,
	}}
	ctx, cancel := context.WithCancel(context.Background())
	checks := &readyzChecks{Manager: mgr}
	runningReadyz = checks
	must(r.SetupWithManager(ctx, checks, 4))
	must(hr.SetupWithManager(ctx, checks, 4))
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "manager:", err)
		}
	}()
	return func() {
		cancel()
		<-done
		_ = publisher.Close(context.Background())
	}
}

// readyzChecks is a manager that keeps the readiness checks added to it,
// so that a test asks what /readyz would.
type readyzChecks struct {
	ctrl.Manager
	mu     sync.Mutex
	checks map[string]healthz.Checker
}

func (m *readyzChecks) AddReadyzCheck(name string, check healthz.Checker) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.checks == nil {
		m.checks = map[string]healthz.Checker{}
	}
	m.checks[name] = check
	return m.Manager.AddReadyzCheck(name, check)
}

// ready is /readyz's answer: the first failing check's error, or nil.
func (m *readyzChecks) ready() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.checks) == 0 {
		return errors.New("no readiness check was added")
	}
	for name, check := range m.checks {
		if err := check(nil); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}

// artifactServer stands in for render-controller's artifact server.
type artifactServer struct {
	*httptest.Server
	mu    sync.Mutex
	files map[string][]byte
	// gates hold the downloads of a path until closed (hold).
	gates map[string]chan struct{}
	// served counts the downloads of each path.
	served map[string]int
}

func newArtifactServer() *artifactServer {
	a := &artifactServer{files: map[string][]byte{}, gates: map[string]chan struct{}{}, served: map[string]int{}}
	a.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		data, ok := a.files[r.URL.Path]
		gate := a.gates[r.URL.Path]
		a.served[r.URL.Path]++
		a.mu.Unlock()
		if gate != nil {
			select {
			case <-gate:
			case <-r.Context().Done():
				return
			}
		}
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Write(data)
	}))
	return a
}

// render does render-controller's part: it serves the manifests and points
// the Kustomization's status at them, with Rendered=True for its generation.
func render(t *testing.T, ks *kustomizev1.Kustomization, revision, manifests string) {
	t.Helper()
	renderServing(t, ks, revision, manifests, []byte(manifests))
}

// renderServing announces the digest of manifests but serves the given
// bytes, which differ when a test forges the artifact.
func renderServing(t *testing.T, ks *kustomizev1.Kustomization, revision, manifests string, served []byte) {
	t.Helper()
	renderAhead(t, ks, revision, manifests, served, 0)
}

// renderAhead is renderServing for the generation ahead of the current
// one: render-controller has rendered a spec that sync-controller has not
// seen yet.
func renderAhead(t *testing.T, ks *kustomizev1.Kustomization, revision, manifests string, served []byte, ahead int64) {
	t.Helper()
	sum := sha256.Sum256([]byte(manifests))
	digest := "sha256:" + hex.EncodeToString(sum[:])
	path := artifactPath(ks, manifests)
	artifacts.mu.Lock()
	artifacts.files[path] = served
	artifacts.mu.Unlock()

	current := &kustomizev1.Kustomization{}
	NewWithT(t).Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(ks), current)).To(Succeed())
	size := int64(len(manifests))
	status := map[string]any{
		"renderedArtifact": map[string]any{
			"path": path, "url": artifacts.URL + path, "revision": revision, "digest": digest,
			"size": size, "lastUpdateTime": metav1.Now().UTC().Format(time.RFC3339),
		},
		"conditions": []any{map[string]any{
			"type": kustomizev1.RenderedCondition, "status": "True", "reason": kustomizev1.RenderSucceededReason,
			"message": "rendered " + revision, "observedGeneration": current.Generation + ahead,
			"lastTransitionTime": metav1.Now().UTC().Format(time.RFC3339),
		}},
	}
	NewWithT(t).Expect(reconcile.ApplyStatus(context.Background(), env.Client, current, "plumb-render", status)).To(Succeed())
}

// artifactPath is where render serves the manifests of ks.
func artifactPath(ks *kustomizev1.Kustomization, manifests string) string {
	sum := sha256.Sum256([]byte(manifests))
	return fmt.Sprintf("/kustomization/%s/%s/%s.yaml", ks.Namespace, ks.Name, hex.EncodeToString(sum[:8]))
}

// downloads returns how many times path was requested.
func (a *artifactServer) downloads(path string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.served[path]
}

// hold makes the downloads of path wait until the returned function is
// called (at the latest when the test ends).
func (a *artifactServer) hold(t *testing.T, path string) (release func()) {
	gate := make(chan struct{})
	a.mu.Lock()
	a.gates[path] = gate
	a.mu.Unlock()
	var once sync.Once
	release = func() { once.Do(func() { close(gate) }) }
	t.Cleanup(release)
	return release
}

// renderFailed reports a failed render of the current generation, keeping
// the last good artifact, as render-controller does.
func renderFailed(t *testing.T, ks *kustomizev1.Kustomization, message string) {
	t.Helper()
	current := &kustomizev1.Kustomization{}
	NewWithT(t).Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(ks), current)).To(Succeed())
	art := current.Status.RenderedArtifact
	status := map[string]any{
		"renderedArtifact": map[string]any{
			"path": art.Path, "url": art.URL, "revision": art.Revision, "digest": art.Digest,
			"lastUpdateTime": art.LastUpdateTime.UTC().Format(time.RFC3339),
		},
		"conditions": []any{map[string]any{
			"type": kustomizev1.RenderedCondition, "status": "False", "reason": kustomizev1.BuildFailedReason,
			"message": message, "observedGeneration": current.Generation,
			"lastTransitionTime": metav1.Now().UTC().Format(time.RFC3339),
		}},
	}
	NewWithT(t).Expect(reconcile.ApplyStatus(context.Background(), env.Client, current, "plumb-render", status)).To(Succeed())
}

// newKustomization creates a Kustomization in a fresh namespace.
func newKustomization(t *testing.T, mutate func(*kustomizev1.Kustomization)) (context.Context, *kustomizev1.Kustomization) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	ns, err := env.Namespace(ctx, "sync")
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	ks := &kustomizev1.Kustomization{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns},
		Spec: kustomizev1.KustomizationSpec{
			SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: "GitRepository", Name: "repo"},
			Interval:  metav1.Duration{Duration: time.Hour},
			Prune:     true,
			Timeout:   &metav1.Duration{Duration: time.Minute},
		},
	}
	if mutate != nil {
		mutate(ks)
	}
	NewWithT(t).Expect(env.Client.Create(ctx, ks)).To(Succeed())
	return ctx, ks
}

// waitReady waits until sync-controller reports Ready=True for revision at
// the current generation, and returns the Kustomization.
func waitReady(t *testing.T, ks *kustomizev1.Kustomization, revision string) *kustomizev1.Kustomization {
	t.Helper()
	got := &kustomizev1.Kustomization{}
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(ks), got)).To(Succeed())
		g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
		ready := conditions.Get(got, meta.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), "Ready: %s", ready.Message)
		g.Expect(got.Status.LastAppliedRevision).To(Equal(revision))
	}, time.Minute, 100*time.Millisecond).Should(Succeed())
	return got
}

// waitNotReady waits for Ready=False with the reason and returns its message.
func waitNotReady(t *testing.T, ks *kustomizev1.Kustomization, reason string) string {
	t.Helper()
	var message string
	NewWithT(t).Eventually(func(g Gomega) {
		got := &kustomizev1.Kustomization{}
		g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(ks), got)).To(Succeed())
		ready := conditions.Get(got, meta.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(ready.Reason).To(Equal(reason), ready.Message)
		message = ready.Message
	}, time.Minute, 100*time.Millisecond).Should(Succeed())
	return message
}

// requestReconcile sets the requestedAt annotation and waits until the
// controller handled it.
func requestReconcile(t *testing.T, ks *kustomizev1.Kustomization) {
	t.Helper()
	g := NewWithT(t)
	token := time.Now().Format(time.RFC3339Nano)
	current := &kustomizev1.Kustomization{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(ks), current)).To(Succeed())
	patch := client.MergeFrom(current.DeepCopy())
	if current.Annotations == nil {
		current.Annotations = map[string]string{}
	}
	current.Annotations[meta.ReconcileRequestAnnotation] = token
	g.Expect(env.Client.Patch(context.Background(), current, patch)).To(Succeed())
	g.Eventually(func() string {
		got := &kustomizev1.Kustomization{}
		_ = env.Client.Get(context.Background(), client.ObjectKeyFromObject(ks), got)
		return got.Status.LastHandledReconcileAt
	}, time.Minute, 50*time.Millisecond).Should(Equal(token))
}

// eventSubscription collects the events NATS carries for a Kustomization.
type eventSubscription struct {
	mu     sync.Mutex
	events []*events.Event
	sub    *nats.Subscription
	conn   *nats.Conn
}

func subscribeEvents(t *testing.T, ks *kustomizev1.Kustomization) *eventSubscription {
	t.Helper()
	nc, err := nats.Connect(env.NATSURL)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	s := &eventSubscription{conn: nc}
	s.sub, err = nc.Subscribe(events.Subject(kustomizev1.KustomizationKind, ks.Namespace, ks.Name), func(m *nats.Msg) {
		e, err := events.Decode(m.Data)
		if err != nil {
			return
		}
		s.mu.Lock()
		s.events = append(s.events, e)
		s.mu.Unlock()
	})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	t.Cleanup(nc.Close)
	return s
}

// withReason returns the events received so far with the reason.
func (s *eventSubscription) withReason(reason string) []*events.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*events.Event
	for _, e := range s.events {
		if e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}

// all returns every event received so far.
func (s *eventSubscription) all() []*events.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*events.Event(nil), s.events...)
}
