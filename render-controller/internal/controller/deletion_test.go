package controller

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/app"
	"plumb.dev/pkg/artifact"
	"plumb.dev/pkg/events"
	"plumb.dev/pkg/options"
	plumbreconcile "plumb.dev/pkg/reconcile"
)

// shardLabel marks the objects of the instances a test starts itself
// (startShard); the suite's instance watches the others.
const shardLabel = "test.plumb.dev/shard"

const aRevision = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

// A fresh Kustomization gets no finalizer from render-controller, and its
// render costs the API server exactly one status apply: no write of the
// Kustomization itself (docs/bench/fleet.md, "Fewer writes per
// Kustomization"), and no Kubernetes Event, its Rendered event being on
// the stream only (docs/design/events.md).
func TestAFreshKustomizationCostsOneStatusApplyAndNoFinalizer(t *testing.T) {
	g := NewWithT(t)
	ns := namespace(t)
	gitRepo(t, ns, "repo", nil)
	publishTree(t, ns, "repo", aRevision, map[string]string{"cm.yaml": cm("settings", "a: b")})
	// The first reconcile must find the artifact in the controller's
	// cache, or it waits for it and writes twice.
	g.Eventually(func(g Gomega) {
		var repo sourcev1.GitRepository
		g.Expect(reconciler.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "repo"}, &repo)).To(Succeed())
		g.Expect(repo.Status.Artifact).NotTo(BeNil())
	}, timeout, poll).Should(Succeed())

	kustomization(t, ns, "app", "repo", nil)
	ks := waitRevision(t, ns, "app", "main@sha1:"+aRevision)
	g.Expect(ks.Finalizers).To(BeEmpty())
	download(t, ks.Status.RenderedArtifact)

	want := map[string]int{
		"PATCH /apis/kustomize.plumb.dev/v1/namespaces/" + ns + "/kustomizations/app/status": 1,
	}
	under := func() map[string]int { return apiRequests.Under("/namespaces/" + ns + "/") }
	g.Eventually(func() []events.Event { return published.of(ns, "app", kustomizev1.RenderedReason) }, timeout, poll).
		Should(HaveLen(1), "the Rendered event is published")
	g.Consistently(under, time.Second, poll).Should(Equal(want))
}

// Deleting a Kustomization that nothing holds removes its artifacts: the
// delete event is enough.
func TestDeletionRemovesStoredArtifacts(t *testing.T) {
	g := NewWithT(t)
	ns := namespace(t)
	ks, a := renderedKustomization(t, ns)
	g.Expect(storage.Exists(a)).To(BeTrue())
	g.Expect(k8s.Delete(context.Background(), ks)).To(Succeed())
	waitObjectGone(t, ks)
	waitArtifactGone(t, storage, a)
}

// sync-controller's deletion reads the delete hooks from the rendered
// artifact: while its finalizer holds the Kustomization, the artifact is
// still served; once it lets go and the object is gone, the artifact goes.
func TestDeletionKeepsTheArtifactUntilSyncControllerLetsGo(t *testing.T) {
	g := NewWithT(t)
	ns := namespace(t)
	ks, a := renderedKustomization(t, ns)
	g.Expect(plumbreconcile.SetFinalizer(context.Background(), k8s, ks, "sync-controller", kustomizev1.SyncFinalizer, true)).To(Succeed())
	live := deleteHeldBySync(t, ks, a)
	g.Expect(live.Finalizers).To(Equal([]string{kustomizev1.SyncFinalizer}))
	letSyncGo(t, live, a)
}

// A Kustomization that an older render-controller gave its finalizer is
// never stuck: once sync-controller has let go, render-controller removes
// the artifacts and releases its finalizer.
func TestTheOldFinalizerIsReleasedOnDeletion(t *testing.T) {
	g := NewWithT(t)
	ns := namespace(t)
	ks, a := renderedKustomization(t, ns)
	// As the older render-controller and sync-controller added them.
	g.Expect(plumbreconcile.SetFinalizer(context.Background(), k8s, ks, FieldManager, Finalizer, true)).To(Succeed())
	g.Expect(plumbreconcile.SetFinalizer(context.Background(), k8s, ks, "sync-controller", kustomizev1.SyncFinalizer, true)).To(Succeed())
	live := deleteHeldBySync(t, ks, a)
	g.Expect(live.Finalizers).To(ContainElement(Finalizer), "render-controller let go before sync-controller")
	letSyncGo(t, live, a)
}

// A Kustomization deleted and created again before a reconcile saw it gone
// starts afresh: the first reconcile of the new object (another UID)
// forgets the old one's, so its render is announced (a Rendered event)
// even when it is the same render. The reconciler here is called directly,
// so that no reconcile runs in between.
func TestARecreatedKustomizationIsAnnouncedAgain(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t)
	st, err := artifact.NewStorage(t.TempDir(), "", 2)
	g.Expect(err).NotTo(HaveOccurred())
	r := &KustomizationReconciler{
		TmpDir: t.TempDir(), Client: k8s, Storage: st, Events: reconciler.Events,
		Metrics: NewMetrics(prometheus.NewRegistry()), Limits: testLimits, RenderLimits: testRenderLimits,
	}
	setUpWithoutManager(t, r)
	gitRepo(t, ns, "repo", nil)
	publishTree(t, ns, "repo", aRevision, map[string]string{"cm.yaml": cm("settings", "a: b")})
	inShard := func(ks *kustomizev1.Kustomization) { ks.Labels = map[string]string{shardLabel: ns} }
	req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: "app"}}
	events := func() int { return len(published.of(ns, "app", kustomizev1.RenderedReason)) }

	first := createKustomization(t, ns, "app", "repo", inShard)
	_, err = r.Reconcile(ctx, req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(events()).To(Equal(1))

	g.Expect(k8s.Delete(ctx, first)).To(Succeed())
	waitObjectGone(t, first)
	again := createKustomization(t, ns, "app", "repo", inShard)
	g.Expect(again.UID).NotTo(Equal(first.UID))
	_, err = r.Reconcile(ctx, req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(events()).To(Equal(2), "the new object's render is announced")
	got := getKS(g, ns, "app")
	g.Expect(got.UID).To(Equal(again.UID))
	g.Expect(st.Verify(got.Status.RenderedArtifact)).To(Succeed())
}

// A Kustomization deleted while render-controller was down has no
// finalizer to wait for it: the sweep at the next start removes its
// artifacts, and keeps those of the Kustomizations that are still there.
func TestTheSweepAtStartRemovesTheArtifactsOfKustomizationsDeletedWhileDown(t *testing.T) {
	g := NewWithT(t)
	ns := namespace(t)
	st, err := artifact.NewStorage(t.TempDir(), "", 2)
	g.Expect(err).NotTo(HaveOccurred())
	gitRepo(t, ns, "repo", nil)
	publishTree(t, ns, "repo", aRevision, map[string]string{"cm.yaml": cm("settings", "a: b")})
	inShard := func(ks *kustomizev1.Kustomization) { ks.Labels = map[string]string{shardLabel: ns} }
	live := createKustomization(t, ns, "live", "repo", inShard)
	gone := createKustomization(t, ns, "gone", "repo", inShard)

	stop := startShard(t, ns, st)
	liveA := waitRevision(t, ns, "live", "main@sha1:"+aRevision).Status.RenderedArtifact
	goneA := waitRevision(t, ns, "gone", "main@sha1:"+aRevision).Status.RenderedArtifact
	g.Expect(st.Exists(liveA)).To(BeTrue())
	g.Expect(st.Exists(goneA)).To(BeTrue())
	stop()

	g.Expect(k8s.Delete(context.Background(), gone)).To(Succeed())
	waitObjectGone(t, gone)
	g.Expect(st.Exists(goneA)).To(BeTrue(), "nothing ran to remove it")

	stop = startShard(t, ns, st)
	defer stop()
	waitArtifactGone(t, st, goneA)
	g.Expect(st.Verify(liveA)).To(Succeed(), "the live Kustomization's render is kept")
	g.Expect(getKS(g, ns, live.Name).Status.RenderedArtifact.Path).To(Equal(liveA.Path))

	// Leaving the shard is like a deletion for it: its informer drops the
	// object, and the artifacts go from its storage.
	patch := []byte(`{"metadata":{"labels":{"` + shardLabel + `":"elsewhere"}}}`)
	g.Expect(k8s.Patch(context.Background(), live, client.RawPatch(types.MergePatchType, patch))).To(Succeed())
	waitArtifactGone(t, st, liveA)
}

// renderedKustomization creates a Kustomization "app" of one ConfigMap
// and waits for its rendered artifact.
func renderedKustomization(t *testing.T, ns string) (*kustomizev1.Kustomization, *meta.Artifact) {
	t.Helper()
	gitRepo(t, ns, "repo", nil)
	publishTree(t, ns, "repo", aRevision, map[string]string{"cm.yaml": cm("settings", "a: b")})
	ks := kustomization(t, ns, "app", "repo", nil)
	return ks, waitRevision(t, ns, "app", "main@sha1:"+aRevision).Status.RenderedArtifact
}

// deleteHeldBySync deletes ks, which sync-controller's finalizer holds,
// waits until render-controller has reconciled the deletion, checks that
// the object stays and its render is still served, and returns it as
// stored.
func deleteHeldBySync(t *testing.T, ks *kustomizev1.Kustomization, a *meta.Artifact) *kustomizev1.Kustomization {
	t.Helper()
	g := NewWithT(t)
	key := client.ObjectKeyFromObject(ks)
	before := reconciler.Reconciles(key)
	g.Expect(k8s.Delete(context.Background(), ks)).To(Succeed())
	g.Eventually(func() int64 { return reconciler.Reconciles(key) }, timeout, poll).Should(BeNumerically(">", before))
	live := &kustomizev1.Kustomization{}
	g.Consistently(func(g Gomega) {
		g.Expect(k8s.Get(context.Background(), key, live)).To(Succeed())
		g.Expect(live.DeletionTimestamp).NotTo(BeNil())
		_, err := os.Stat(storage.LocalPath(a.Path))
		g.Expect(err).NotTo(HaveOccurred(), "the artifact went before sync-controller let go")
	}, 2*time.Second, poll).Should(Succeed())
	g.Expect(download(t, a)).To(ContainSubstring("settings"))
	return live
}

// letSyncGo releases sync-controller's finalizer from the deleted live
// and waits until it is gone and its artifact with it.
func letSyncGo(t *testing.T, live *kustomizev1.Kustomization, a *meta.Artifact) {
	t.Helper()
	NewWithT(t).Expect(plumbreconcile.SetFinalizer(context.Background(), k8s, live, "sync-controller", kustomizev1.SyncFinalizer, false)).To(Succeed())
	waitObjectGone(t, live)
	waitArtifactGone(t, storage, a)
}

// waitObjectGone waits until the object is not found; any other error
// fails the test at once.
func waitObjectGone(t *testing.T, obj client.Object) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		err := k8s.Get(context.Background(), client.ObjectKeyFromObject(obj), obj.DeepCopyObject().(client.Object))
		if err != nil && !apierrors.IsNotFound(err) {
			StopTrying("reading " + obj.GetName()).Wrap(err).Now()
		}
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the object is still there")
	}, timeout, poll).Should(Succeed())
}

// waitArtifactGone waits until the artifact's file and its object's
// folder are removed from st; an error other than "not there" fails the
// test at once.
func waitArtifactGone(t *testing.T, st *artifact.Storage, a *meta.Artifact) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		for _, p := range []string{st.LocalPath(a.Path), st.LocalPath(a.Path + "/..")} {
			_, err := os.Stat(p)
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				StopTrying("looking for " + p).Wrap(err).Now()
			}
			g.Expect(err).To(MatchError(os.ErrNotExist), p+" is still there")
		}
	}, timeout, poll).Should(Succeed())
}

// startShard runs another render-controller for the Kustomizations
// labelled shardLabel=shard, on storage st, and returns its stop
// function, which waits for it to end.
func startShard(t *testing.T, shard string, st *artifact.Storage) func() {
	t.Helper()
	g := NewWithT(t)
	mgrOpts := options.Manager{MetricsAddr: "0", HealthAddr: "0", Concurrent: 2, WatchLabelSelector: shardLabel + "=" + shard}
	mgr, err := app.NewTrimmingManager(ControllerName, env.Config, env.Scheme, mgrOpts, CacheTrims(), &kustomizev1.Kustomization{}, &helmv2.HelmRelease{})
	g.Expect(err).NotTo(HaveOccurred())
	r := &KustomizationReconciler{
		TmpDir:               t.TempDir(),
		Client:               mgr.GetClient(),
		Storage:              st,
		Events:               events.NewRecorder(mgr.GetEventRecorder(ControllerName), published, env.Scheme, ControllerName),
		Metrics:              NewMetrics(prometheus.NewRegistry()),
		Limits:               testLimits,
		RenderLimits:         testRenderLimits,
		RenderTimeout:        testRenderTimeout,
		NoCrossNamespaceRefs: true,
		DependencyRequeue:    time.Second,
	}
	ctx, cancel := context.WithCancel(context.Background())
	skipNameValidation := true // the suite's controller has the same name
	opts := controller.Options{MaxConcurrentReconciles: 2, SkipNameValidation: &skipNameValidation}
	if err := r.SetupWithManager(ctx, mgr, opts); err != nil {
		cancel()
		t.Fatal(err)
	}
	// The shard's pool is new: its first renders must not wait for its
	// first worker within their time limit.
	waitIdleWorker(t, r.pool)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	return func() {
		cancel()
		g.Expect(<-done).To(Succeed())
		r.pool.Close()
		g.Expect(r.trees.Close()).To(Succeed())
	}
}
