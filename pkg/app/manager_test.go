package app_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/leaderelection"
	"github.com/go-logr/logr/funcr"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"plumb.dev/pkg/app"
	"plumb.dev/pkg/artifact"
	"plumb.dev/pkg/listen"
	"plumb.dev/pkg/options"
	"plumb.dev/pkg/testenv"
)

var (
	env *testenv.Environment
	// logs holds what the managers log, for the tests that read it.
	logs syncBuffer
)

func TestMain(m *testing.M) {
	ctrl.SetLogger(funcr.New(func(prefix, args string) { logs.WriteString(prefix + " " + args + "\n") }, funcr.Options{}))
	os.Exit(testenv.Run(m, &env, testenv.WithoutNATS()))
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) WriteString(v string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b.WriteString(v)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// replica is one manager with an artifact server, as source-controller
// and render-controller run it.
type replica struct {
	health string
	cancel context.CancelFunc
	done   chan struct{}
	err    error // what Start returned, once done is closed
}

func startReplica(t *testing.T, name string, leader leaderelection.Options) *replica {
	t.Helper()
	storage, err := artifact.NewStorage(t.TempDir(), "", 1)
	if err != nil {
		t.Fatal(err)
	}
	r := &replica{health: freeAddr(t), done: make(chan struct{})}
	mgr, err := app.NewManager(name, env.Config, env.Scheme, options.Manager{
		MetricsAddr: "0", HealthAddr: r.health, Concurrent: 1, LeaderElection: leader,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := app.AddArtifactServer(mgr, artifact.NewServer("127.0.0.1:0", storage)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() { r.err = mgr.Start(ctx); close(r.done) }()
	t.Cleanup(r.stop)
	return r
}

func (r *replica) stop() {
	r.cancel()
	select {
	case <-r.done:
	case <-time.After(30 * time.Second):
	}
}

// ready reports whether the replica's /readyz answers 200.
func (r *replica) ready() bool {
	resp, err := http.Get("http://" + r.health + "/readyz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

func readyCount(rs ...*replica) int {
	n := 0
	for _, r := range rs {
		if r.ready() {
			n++
		}
	}
	return n
}

func TestOnlyTheLeaderIsReady(t *testing.T) {
	g := NewWithT(t)
	ns, err := env.Namespace(context.Background(), "leader")
	g.Expect(err).NotTo(HaveOccurred())
	t.Setenv(app.RuntimeNamespaceEnv, ns)
	leader := leaderelection.Options{
		Enable: true, ReleaseOnCancel: true,
		LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: 250 * time.Millisecond,
	}
	a := startReplica(t, "readiness-test", leader)
	b := startReplica(t, "readiness-test", leader)

	// Exactly one serves artifacts and is ready, and it stays that way.
	g.Eventually(func() int { return readyCount(a, b) }, 30*time.Second, 100*time.Millisecond).Should(Equal(1))
	g.Consistently(func() int { return readyCount(a, b) }, 2*time.Second, 100*time.Millisecond).Should(Equal(1))

	// The leader steps down (release on cancel): the other one takes the
	// Lease, starts its artifact server and becomes ready.
	first, second := a, b
	if !a.ready() {
		first, second = b, a
	}
	first.stop()
	g.Expect(first.err).To(Succeed())
	g.Eventually(second.ready, 30*time.Second, 100*time.Millisecond).Should(BeTrue())
	g.Expect(first.ready()).To(BeFalse())
}

func TestLeaderElectionOutsideAClusterNamesWhatIsMissing(t *testing.T) {
	g := NewWithT(t)
	t.Setenv(app.RuntimeNamespaceEnv, "")
	_, err := app.NewManager("no-namespace", env.Config, env.Scheme, options.Manager{
		MetricsAddr: "0", HealthAddr: "0", Concurrent: 1,
		LeaderElection: leaderelection.Options{Enable: true, LeaseDuration: time.Minute, RenewDeadline: 30 * time.Second, RetryPeriod: time.Second},
	})
	g.Expect(err).To(MatchError(And(ContainSubstring("RUNTIME_NAMESPACE"), ContainSubstring("--enable-leader-election=false"))))
}

// panicking panics on every reconcile of the ConfigMap named "boom".
type panicking struct{ calls atomic.Int32 }

func (p *panicking) Reconcile(_ context.Context, req ctrl.Request) (ctrl.Result, error) {
	if req.Name == "boom" {
		p.calls.Add(1)
		panic("boom: a reconciler met input it cannot handle")
	}
	return ctrl.Result{}, nil
}

func TestAPanickingReconcileDoesNotCrashTheProcessAndIsReported(t *testing.T) {
	g := NewWithT(t)
	ns, err := env.Namespace(context.Background(), "panic")
	g.Expect(err).NotTo(HaveOccurred())
	mgr, err := app.NewManager("panic-test", env.Config, env.Scheme, options.Manager{MetricsAddr: "0", HealthAddr: "0", Concurrent: 1})
	g.Expect(err).NotTo(HaveOccurred())
	r := &panicking{}
	// Options of its own, as every Plumb controller passes: the manager's
	// RecoverPanic applies all the same.
	g.Expect(ctrl.NewControllerManagedBy(mgr).Named("panicking").
		For(&corev1.ConfigMap{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			return o.GetNamespace() == ns
		}))).Complete(r)).To(Succeed())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	defer func() { cancel(); <-done }()

	g.Expect(env.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "boom"}})).To(Succeed())
	// Retried with backoff: the process lives on and reconciles again.
	g.Eventually(r.calls.Load, 30*time.Second, 50*time.Millisecond).Should(BeNumerically(">=", 2))
	g.Expect(panicCount(t, "panicking")).To(BeNumerically(">=", 2))
	g.Expect(logs.String()).To(And(ContainSubstring(`"msg"="Reconciler error"`), ContainSubstring("panic: boom: a reconciler met input it cannot handle [recovered]")))
	select {
	case err := <-done:
		t.Fatalf("the manager stopped: %v", err)
	default:
	}
}

func panicCount(t *testing.T, controller string) float64 {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "controller_runtime_reconcile_panics_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == controller {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// inheritedSocket binds 127.0.0.1:0 and returns its address and fd:N for a
// duplicate descriptor of it, as a process that inherited it would see.
func inheritedSocket(t *testing.T) (addr, flag string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	f, err := ln.(*net.TCPListener).File()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// listen.Listen owns and closes the descriptor it is given.
	fd, err := syscall.Dup(int(f.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	return ln.Addr().String(), listen.FD(fd)
}

// Given fd:N, the manager serves /metrics, /healthz and /readyz (with the
// checks the controller added) on the inherited sockets.
func TestProbesAndMetricsServeOnInheritedSockets(t *testing.T) {
	g := NewWithT(t)
	metricsAddr, metricsFD := inheritedSocket(t)
	healthAddr, healthFD := inheritedSocket(t)
	mgr, err := app.NewManager("inherited-test", env.Config, env.Scheme, options.Manager{
		MetricsAddr: metricsFD, HealthAddr: healthFD, Concurrent: 1,
	})
	g.Expect(err).NotTo(HaveOccurred())
	var ready atomic.Bool
	g.Expect(mgr.AddReadyzCheck("flag", func(*http.Request) error {
		if !ready.Load() {
			return errors.New("not yet")
		}
		return nil
	})).To(Succeed())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	defer func() { cancel(); g.Expect(<-done).To(Succeed()) }()

	status := func(url string) int {
		resp, err := http.Get(url)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	g.Eventually(func() int { return status("http://" + healthAddr + "/healthz") }).WithTimeout(30 * time.Second).Should(Equal(http.StatusOK))
	g.Expect(status("http://" + healthAddr + "/readyz")).To(Equal(http.StatusInternalServerError))
	g.Expect(status("http://" + healthAddr + "/readyz/ping")).To(Equal(http.StatusOK))
	ready.Store(true)
	g.Expect(status("http://" + healthAddr + "/readyz")).To(Equal(http.StatusOK))
	g.Expect(status("http://" + metricsAddr + "/metrics")).To(Equal(http.StatusOK))
	g.Expect(mgr.AddReadyzCheck("late", func(*http.Request) error { return nil })).NotTo(Succeed())
}
