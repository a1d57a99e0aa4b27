package app_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/leaderelection"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/app"
	"plumb.dev/pkg/options"
	"plumb.dev/pkg/testenv"
)

// shardRecorder is a reconciler of GitRepositories, the shard's own kind,
// that records which of them its manager's cache holds when it reconciles.
type shardRecorder struct {
	client client.Client
	mu     sync.Mutex
	held   map[string]bool
}

func (r *shardRecorder) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var repo sourcev1.GitRepository
	err := r.client.Get(ctx, req.NamespacedName, &repo)
	if err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.held[req.Name] = err == nil
	return ctrl.Result{}, nil
}

// holds returns the names the last reconcile of each found in the cache.
func (r *shardRecorder) holds() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var names []string
	for name, held := range r.held {
		if held {
			names = append(names, name)
		}
	}
	return names
}

// shard is one instance of a controller started with selector.
type shard struct {
	mgr      ctrl.Manager
	recorder *shardRecorder
}

func startShard(t *testing.T, ns, name, selector string, leader leaderelection.Options) *shard {
	t.Helper()
	mgr, err := app.NewManager("shard-test", env.Config, env.Scheme, options.Manager{
		MetricsAddr: "0", HealthAddr: "0", Concurrent: 1, LeaderElection: leader, WatchLabelSelector: selector,
	}, &sourcev1.GitRepository{})
	if err != nil {
		t.Fatal(err)
	}
	r := &shardRecorder{client: mgr.GetClient(), held: map[string]bool{}}
	if err := ctrl.NewControllerManagedBy(mgr).Named("shard-"+name).
		For(&sourcev1.GitRepository{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			return o.GetNamespace() == ns
		}))).Complete(r); err != nil {
		t.Fatal(err)
	}
	testenv.StartManager(t, mgr)
	return &shard{mgr: mgr, recorder: r}
}

func gitRepository(ns, name string, labels map[string]string) *sourcev1.GitRepository {
	return &sourcev1.GitRepository{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: sourcev1.GitRepositorySpec{
			URL:      "https://git.example.com/" + name + ".git",
			Interval: metav1.Duration{Duration: time.Hour},
		},
	}
}

// Two instances, one for shard1 and the main one for the objects without a
// shard key, each reconcile their own objects only, each is the leader of
// its own Lease, and an object whose key changes moves from one to the
// other. Kinds that are not the controller's own stay whole in both.
func TestShardsReconcileOnlyTheirObjectsAndARelabelledOneMoves(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, err := env.Namespace(ctx, "shard")
	g.Expect(err).NotTo(HaveOccurred())
	t.Setenv(app.RuntimeNamespaceEnv, ns)
	leader := leaderelection.Options{
		Enable: true, ReleaseOnCancel: true,
		LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: 250 * time.Millisecond,
	}
	shard1 := startShard(t, ns, "shard1", meta.ShardKeyLabel+" in (shard1)", leader)
	main := startShard(t, ns, "main", "!"+meta.ShardKeyLabel, leader)

	// Each shard leads its own Lease: neither waits for the other.
	for _, s := range []*shard{shard1, main} {
		select {
		case <-s.mgr.Elected():
		case <-time.After(30 * time.Second):
			t.Fatal("a shard was not elected: shards share one Lease")
		}
	}
	var leases coordinationv1.LeaseList
	g.Expect(env.Client.List(ctx, &leases, client.InNamespace(ns))).To(Succeed())
	g.Expect(leases.Items).To(HaveLen(2))

	key := func(name string) map[string]string { return map[string]string{meta.ShardKeyLabel: name} }
	for _, repo := range []*sourcev1.GitRepository{
		gitRepository(ns, "in-shard1", key("shard1")),
		gitRepository(ns, "unsharded", nil),
		gitRepository(ns, "in-shard2", key("shard2")),
	} {
		g.Expect(env.Client.Create(ctx, repo)).To(Succeed())
	}
	g.Eventually(shard1.recorder.holds, 30*time.Second, 100*time.Millisecond).Should(ConsistOf("in-shard1"))
	g.Eventually(main.recorder.holds, 30*time.Second, 100*time.Millisecond).Should(ConsistOf("unsharded"))
	// shard2 has no instance here: no one reconciles its object.
	g.Consistently(func() []string { return append(shard1.recorder.holds(), main.recorder.holds()...) }, 2*time.Second, 100*time.Millisecond).
		Should(ConsistOf("in-shard1", "unsharded"))

	// The cache of the shard's own kind holds its share only…
	err = shard1.mgr.GetClient().Get(ctx, types.NamespacedName{Namespace: ns, Name: "unsharded"}, &sourcev1.GitRepository{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "shard1 reads the main instance's GitRepository: %v", err)
	// …and any other kind whole: a Kustomization's source may be in
	// another shard than the Kustomization.
	chart := &sourcev1.HelmRepository{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "charts", Labels: key("shard2")},
		Spec:       sourcev1.HelmRepositorySpec{URL: "https://charts.example.com", Interval: metav1.Duration{Duration: time.Hour}},
	}
	g.Expect(env.Client.Create(ctx, chart)).To(Succeed())
	g.Eventually(func() error {
		return shard1.mgr.GetClient().Get(ctx, client.ObjectKeyFromObject(chart), &sourcev1.HelmRepository{})
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())

	// The unsharded object is given to shard1: the main instance lets go
	// of it, shard1 takes it.
	moved := &sourcev1.GitRepository{}
	g.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "unsharded"}, moved)).To(Succeed())
	moved.Labels = key("shard1")
	g.Expect(env.Client.Update(ctx, moved)).To(Succeed())
	g.Eventually(shard1.recorder.holds, 30*time.Second, 100*time.Millisecond).Should(ConsistOf("in-shard1", "unsharded"))
	g.Eventually(main.recorder.holds, 30*time.Second, 100*time.Millisecond).Should(BeEmpty())
}

func TestAWatchLabelSelectorNeedsTheControllersOwnKinds(t *testing.T) {
	g := NewWithT(t)
	opts := options.Manager{MetricsAddr: "0", HealthAddr: "0", Concurrent: 1, WatchLabelSelector: meta.ShardKeyLabel + "=shard1"}
	_, err := app.NewManager("no-kinds", env.Config, env.Scheme, opts)
	g.Expect(err).To(MatchError(ContainSubstring("--watch-label-selector is given but the controller names no kinds")))

	opts.WatchLabelSelector = meta.ShardKeyLabel + " in (shard1"
	_, err = app.NewManager("bad-selector", env.Config, env.Scheme, opts, &sourcev1.GitRepository{})
	g.Expect(err).To(MatchError(ContainSubstring(`--watch-label-selector "sharding.plumb.dev/key in (shard1"`)))
}
