package objectset

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	kevents "k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"plumb.dev/api/meta"
	setv1 "plumb.dev/api/set/v1"
	"plumb.dev/pkg/events"
	"plumb.dev/pkg/fetch"
	"plumb.dev/pkg/kinds"
	"plumb.dev/pkg/netguard"
	"plumb.dev/pkg/testenv"
	synccontroller "plumb.dev/sync-controller/internal/controller"
	"plumb.dev/sync-controller/internal/pullrequest"
)

var (
	env *testenv.Environment
	// cached reads through the controller's own cache: what the
	// reconciler sees.
	cached    client.Reader
	artifacts *testenv.ArtifactServer
	recorded  = &eventLog{}
)

func TestMain(m *testing.M) {
	var err error
	if env, err = testenv.Start(testenv.WithoutNATS()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	artifacts = testenv.StartArtifactServer()
	stopController = startController(env.Config, false)
	code := m.Run()
	stopController()
	artifacts.Close()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(code)
}

// stopController stops the running reconciler; a test that runs one of
// its own (restrictedController) replaces it.
var stopController func()

// startController runs the ObjectSet reconciler in this process, as
// sync-controller's main does, acting as cfg says, and returns its stop
// function.
func startController(cfg *rest.Config, noCrossNamespaceRefs bool) func() {
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 env.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	})
	must(err)
	r := &Reconciler{
		Client:               mgr.GetClient(),
		Reader:               mgr.GetAPIReader(),
		Config:               cfg,
		Scheme:               env.Scheme,
		Events:               events.NewRecorder(recorded, nil, env.Scheme, kinds.SyncController),
		Fetch:                fetch.Options{Backoff: 10 * time.Millisecond, Attempts: 2},
		NoCrossNamespaceRefs: noCrossNamespaceRefs,
		Guard:                synccontroller.DefaultPruneGuard.HoldsShare,
		PullRequests:         pullRequestClient(),
	}
	must(r.SetupWithManager(mgr, controller.Options{MaxConcurrentReconciles: 4}))
	cached = mgr.GetClient()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		must(mgr.Start(ctx))
	}()
	return func() { cancel(); <-done }
}

// pullRequestClient lists pull requests from the tests' stand-ins: on
// loopback, over TLS with httptest's certificate, with a page bound small
// enough for a test to pass.
func pullRequestClient() *pullrequest.Client {
	srv := httptest.NewTLSServer(http.NotFoundHandler())
	defer srv.Close()
	tlsConfig := srv.Client().Transport.(*http.Transport).TLSClientConfig
	return pullrequest.New(netguard.Policy{AllowLoopback: true},
		pullrequest.Limits{MaxPages: 25, MaxPageBytes: testMaxPageBytes, MaxPullRequests: MaxElements}, tlsConfig)
}

// testMaxPageBytes is the suite's bound of one page of pull requests.
const testMaxPageBytes = 256 << 10

func must(err error) {
	if err != nil {
		panic(err)
	}
}

// eventLog keeps the events recorded, by object name.
type eventLog struct {
	*kevents.FakeRecorder
	mu     sync.Mutex
	events map[string][]string
}

func (l *eventLog) AnnotatedEventf(regarding, _ runtime.Object, _ map[string]string, eventtype, reason, _, note string, args ...any) {
	l.record(regarding, eventtype, reason, fmt.Sprintf(note, args...))
}

func (l *eventLog) Eventf(regarding, _ runtime.Object, eventtype, reason, _, note string, args ...any) {
	l.record(regarding, eventtype, reason, fmt.Sprintf(note, args...))
}

func (l *eventLog) record(regarding runtime.Object, eventtype, reason, msg string) {
	o, ok := regarding.(client.Object)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.events == nil {
		l.events = map[string][]string{}
	}
	key := o.GetNamespace() + "/" + o.GetName()
	l.events[key] = append(l.events[key], eventtype+" "+reason+" "+msg)
}

// of returns the events of the set, those with reason when given.
func (l *eventLog) of(set *setv1.ObjectSet, reason string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, e := range l.events[set.Namespace+"/"+set.Name] {
		if reason == "" || strings.Contains(e, " "+reason+" ") {
			out = append(out, e)
		}
	}
	return out
}

// namespace is a fresh namespace for one test.
func namespace(t *testing.T) string {
	t.Helper()
	ns, err := env.Namespace(context.Background(), "set")
	if err != nil {
		t.Fatal(err)
	}
	return ns
}

// readyCondition waits for the set's current generation to have a Ready
// condition with status and reason, and returns it.
func waitReady(t *testing.T, g Gomega, set *setv1.ObjectSet, status, reason string) *setv1.ObjectSet {
	t.Helper()
	got := &setv1.ObjectSet{}
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(set), got)).To(Succeed())
		g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
		c := conditions.Get(got, meta.ReadyCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(string(c.Status)).To(Equal(status), c.Message)
		g.Expect(c.Reason).To(Equal(reason), c.Message)
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	return got
}

// gone asserts that the object is not found: any other error fails.
func gone(g Gomega, obj client.Object) {
	err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)
	g.Expect(err).To(HaveOccurred(), "%s still exists", obj.GetName())
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%v", err)
}
