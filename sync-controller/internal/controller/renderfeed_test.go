package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	"plumb.dev/pkg/reconcile"
	"plumb.dev/pkg/renderfeed"
)

// feedFixture is render-controller's side of the feed in these tests: a
// real Feed served beside the test's artifacts under one address, as
// render-controller's artifact server serves both, and sync-controller
// restarted with RenderRecords and a Subscriber reading it.
type feedFixture struct {
	feed *renderfeed.Feed
	srv  *httptest.Server
	// records are what the subscriber hands on, kept by the controller
	// startFeed started (and by one a test starts again with them).
	records *RenderRecords
	// stop stops the subscriber (the controller is restarted without the
	// feed when the test ends).
	stop func()
}

func startFeed(t *testing.T) *feedFixture {
	t.Helper()
	f := &feedFixture{feed: &renderfeed.Feed{}}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == renderfeed.Path {
			f.feed.ServeHTTP(w, r)
			return
		}
		artifacts.Config.Handler.ServeHTTP(w, r)
	}))
	records := NewRenderRecords(ctrl.Log.WithName("render-feed"))
	f.records = records
	stopController()
	stopController = startController(func(r *KustomizationReconciler) { r.Renders = records })
	f.stop = f.subscribe(records)
	t.Cleanup(func() {
		f.stop()
		stopController()
		stopController = startController()
		f.srv.Close()
	})
	NewWithT(t).Eventually(f.feed.Subscribed, 30*time.Second, 10*time.Millisecond).Should(BeTrue())
	return f
}

// subscribe runs a Subscriber of the feed handing records to records,
// until the returned function is called.
func (f *feedFixture) subscribe(records *RenderRecords) func() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	s := &renderfeed.Subscriber{URL: f.srv.URL + renderfeed.Path, Handle: records.Handle, Reset: records.Reset,
		MinBackoff: 20 * time.Millisecond, Log: logr.Discard()}
	go func() { defer close(done); _ = s.Start(ctx) }()
	return func() { cancel(); <-done }
}

// record serves manifests as ks's render of revision and returns the
// feed's record of it, for ks's current UID and generation, naming ks's
// current render status as the one it replaces, as render-controller
// does.
func (f *feedFixture) record(t *testing.T, ks *kustomizev1.Kustomization, revision, manifests string) renderfeed.Record {
	t.Helper()
	current := &kustomizev1.Kustomization{}
	NewWithT(t).Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(ks), current)).To(Succeed())
	sum := sha256.Sum256([]byte(manifests))
	path := artifactPath(ks, manifests)
	artifacts.mu.Lock()
	artifacts.files[path] = []byte(manifests)
	artifacts.mu.Unlock()
	size := int64(len(manifests))
	return renderfeed.Record{
		Kind: kustomizev1.KustomizationKind, Namespace: ks.Namespace, Name: ks.Name,
		UID: current.UID, Generation: current.Generation,
		Artifact: &meta.Artifact{Path: path, URL: f.srv.URL + path, Revision: revision,
			Digest: "sha256:" + hex.EncodeToString(sum[:]), Size: &size, LastUpdateTime: metav1.Now()},
		Message:  "rendered 4 objects from revision " + revision,
		Replaces: []string{renderStatusOf(current).digest()},
	}
}

func (f *feedFixture) offer(t *testing.T, rec renderfeed.Record) {
	t.Helper()
	_, err := f.feed.Offer(rec, time.Now())
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
}

// renderOwners are the field managers of ks's status.renderedArtifact.
func renderOwners(ks *kustomizev1.Kustomization) []string {
	var managers []string
	for _, mf := range ks.ManagedFields {
		if mf.Subresource == "status" && mf.FieldsV1 != nil && strings.Contains(mf.FieldsV1.GetRawString(), `"f:renderedArtifact"`) {
			managers = append(managers, mf.Manager)
		}
	}
	return managers
}

// With render-controller's feed, a fresh Kustomization of 4 objects costs
// one status apply: sync-controller's outcome, which carries the render
// (renderedArtifact and Rendered=True at its generation) under
// plumb-sync. A later write of plumb-sync's keeps the render: server-side
// apply would remove a field its only manager leaves out.
func TestAFreshKustomizationFromTheFeedCostsOneStatusWrite(t *testing.T) {
	g := NewWithT(t)
	f := startFeed(t)
	requests.Reset()
	_, ks := newKustomization(t, nil)
	key := client.ObjectKeyFromObject(ks)
	g.Eventually(func() bool { return running.renderWaits.waiting(key) }, time.Minute, 10*time.Millisecond).Should(BeTrue())
	rec := f.record(t, ks, "main@sha1:fee1", fleetApp(ks.Namespace))
	f.offer(t, rec)
	got := waitReady(t, ks, "main@sha1:fee1")
	g.Expect(got.Status.Inventory.Entries).To(HaveLen(4))
	g.Expect(got.Status.RenderedArtifact).NotTo(BeNil())
	g.Expect(got.Status.RenderedArtifact.Digest).To(Equal(rec.Artifact.Digest))
	rendered := conditions.Get(got, kustomizev1.RenderedCondition)
	g.Expect(rendered).NotTo(BeNil())
	g.Expect(rendered.Status).To(Equal(metav1.ConditionTrue))
	g.Expect(rendered.ObservedGeneration).To(Equal(got.Generation))
	g.Expect(rendered.Message).To(Equal(rec.Message))
	g.Expect(renderOwners(got)).To(Equal([]string{statusManager}))

	want := map[string]int{
		"apply kustomizations/status": 1, // the sync's outcome, with the render
		"apply kustomizations":        1, // the finalizer
		"apply objects":               4,
		"post events":                 1, // Applied, sent in the background
	}
	g.Eventually(func() map[string]int { return requestsByKind(ks.Namespace) }, 10*time.Second, 10*time.Millisecond).Should(Equal(want))
	t.Logf("requests of sync-controller for a fresh Kustomization of 4 objects from the feed: %v", requestsByKind(ks.Namespace))

	// A later write of plumb-sync's (the handled reconcile request) keeps
	// the render it owns.
	requestReconcile(t, ks)
	again := &kustomizev1.Kustomization{}
	g.Expect(env.Client.Get(context.Background(), key, again)).To(Succeed())
	g.Expect(again.Status.LastHandledReconcileAt).NotTo(BeEmpty())
	g.Expect(again.Status.RenderedArtifact).NotTo(BeNil(), "plumb-sync's later write keeps the render")
	g.Expect(again.Status.RenderedArtifact.Digest).To(Equal(rec.Artifact.Digest))
	g.Expect(conditions.IsTrue(again, kustomizev1.RenderedCondition)).To(BeTrue())
}

// A record is used only when it names the cached object's UID and
// generation and an artifact under the feed's address; anything else is
// dropped, and the Kustomization keeps waiting for its render, writing
// nothing.
func TestARenderRecordOfTheWrongObjectIsDropped(t *testing.T) {
	g := NewWithT(t)
	f := startFeed(t)
	ctx, ks := newKustomization(t, nil)
	key := client.ObjectKeyFromObject(ks)
	// Generation 2: a record of generation 1 is stale.
	current := &kustomizev1.Kustomization{}
	g.Expect(env.Client.Get(ctx, key, current)).To(Succeed())
	current.Spec.Interval = metav1.Duration{Duration: 2 * time.Hour}
	g.Expect(env.Client.Update(ctx, current)).To(Succeed())
	g.Expect(current.Generation).To(Equal(int64(2)))
	g.Eventually(func() bool { return running.renderWaits.waiting(key) }, time.Minute, 10*time.Millisecond).Should(BeTrue())

	good := f.record(t, ks, "main@sha1:600d", fleetApp(ks.Namespace))
	otherUID := good
	otherUID.UID = types.UID("not-" + string(good.UID))
	older := good
	older.Generation = 1
	elsewhere := good
	a := *good.Artifact
	a.URL = "http://elsewhere.example" + a.Path
	elsewhere.Artifact = &a
	requests.Reset()
	for _, rec := range []renderfeed.Record{otherUID, older, elsewhere} {
		f.offer(t, rec)
		g.Consistently(func(g Gomega) {
			got := &kustomizev1.Kustomization{}
			g.Expect(env.Client.Get(ctx, key, got)).To(Succeed())
			g.Expect(got.Status.RenderedArtifact).To(BeNil())
			g.Expect(conditions.Get(got, meta.ReadyCondition)).To(BeNil())
		}, 2*time.Second, 100*time.Millisecond).Should(Succeed())
		g.Expect(requestsByKind(ks.Namespace)).NotTo(HaveKey("apply kustomizations/status"))
	}
	f.offer(t, good)
	waitReady(t, ks, "main@sha1:600d")
}

// A render offered after render-controller wrote a failure of the same
// generation (a source without an artifact yet, a broken commit then a
// fixed one) is newer than the failure and is taken.
func TestARenderFromTheFeedAfterAFailureIsTaken(t *testing.T) {
	g := NewWithT(t)
	f := startFeed(t)
	_, ks := newKustomization(t, nil)
	first := f.record(t, ks, "main@sha1:a1", configMaps(ks.Namespace, "a"))
	f.offer(t, first)
	waitReady(t, ks, "main@sha1:a1")
	renderFailed(t, ks, "kustomize build failed: boom")
	waitNotReady(t, ks, kustomizev1.BuildFailedReason)
	f.offer(t, f.record(t, ks, "main@sha1:a2", configMaps(ks.Namespace, "a", "b")))
	got := waitReady(t, ks, "main@sha1:a2")
	g.Expect(conditions.IsTrue(got, kustomizev1.RenderedCondition)).To(BeTrue())
	g.Expect(got.Status.RenderedArtifact.Revision).To(Equal("main@sha1:a2"))
}

// sync-controller restarted, or its connection cut, loses no render: the
// next connection reads the renders still pending (the snapshot).
func TestARenderOfferedWhileSyncControllerIsAwayIsNotLost(t *testing.T) {
	g := NewWithT(t)
	f := startFeed(t)
	_, ks := newKustomization(t, nil)
	key := client.ObjectKeyFromObject(ks)
	g.Eventually(func() bool { return running.renderWaits.waiting(key) }, time.Minute, 10*time.Millisecond).Should(BeTrue())
	f.stop()
	stopController()
	g.Eventually(f.feed.Subscribed, 30*time.Second, 10*time.Millisecond).Should(BeFalse())
	// As a render-controller of the previous version sends it: naming no
	// render status it replaces, it is taken by that version's rule.
	rec := f.record(t, ks, "main@sha1:5a5", fleetApp(ks.Namespace))
	rec.Replaces = nil
	f.offer(t, rec)

	records := NewRenderRecords(ctrl.Log.WithName("render-feed"))
	stopController = startController(func(r *KustomizationReconciler) { r.Renders = records })
	f.stop = f.subscribe(records)
	got := waitReady(t, ks, "main@sha1:5a5")
	g.Expect(got.Status.RenderedArtifact.Revision).To(Equal("main@sha1:5a5"))
}

// behindCache is a cache that has not seen one object's create yet, as
// sync-controller's informer in a fleet created at once can be behind
// render-controller's: Gets of the key answer NotFound while hidden.
type behindCache struct {
	client.Client
	key    types.NamespacedName
	hidden atomic.Bool
	// kept says whether a record of key is kept; withRecord counts the
	// NotFound answers given while one was.
	kept       func() bool
	withRecord atomic.Int32
}

func (c *behindCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*kustomizev1.Kustomization); ok && key == c.key && c.hidden.Load() {
		if c.kept() {
			c.withRecord.Add(1)
		}
		return apierrors.NewNotFound(kustomizev1.GroupVersion.WithResource("kustomizations").GroupResource(), key.Name)
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

// A record read before sync-controller's cache has the object's create
// (render-controller's watch ahead of sync-controller's) is kept: the
// reconcile it queues finds no object in the cache, and the record is
// taken at the reconcile of the create's event. Dropped, it was not
// offered again (the same render is sent once), and the Kustomization
// waited for render-controller's own write ten graces later; here, with
// no render-controller, for ever.
func TestARenderRecordReadBeforeTheCacheHasItsObjectIsKept(t *testing.T) {
	g := NewWithT(t)
	f := startFeed(t)
	ctx, ks := newKustomization(t, nil)
	key := client.ObjectKeyFromObject(ks)
	g.Eventually(func() bool { return running.renderWaits.waiting(key) }, time.Minute, 10*time.Millisecond).Should(BeTrue())
	f.stop()
	stopController()
	g.Eventually(f.feed.Subscribed, 30*time.Second, 10*time.Millisecond).Should(BeFalse())
	f.offer(t, f.record(t, ks, "main@sha1:1a7e", fleetApp(ks.Namespace)))

	records := NewRenderRecords(ctrl.Log.WithName("render-feed"))
	behind := &behindCache{key: key, kept: func() bool { return records.keeps(key) }}
	behind.hidden.Store(true)
	stopController = startController(func(r *KustomizationReconciler) {
		r.Renders = records
		behind.Client = r.Client
		r.Client = behind
	})
	f.stop = f.subscribe(records)
	// The record is read (the snapshot) and the reconcile it queues finds
	// no object in the cache.
	g.Eventually(behind.withRecord.Load, 30*time.Second, 10*time.Millisecond).Should(BeNumerically(">", 0))
	// The cache catches up; its event of the object queues a reconcile
	// (here an annotation's update: the create is in it already).
	behind.hidden.Store(false)
	current := &kustomizev1.Kustomization{}
	g.Expect(env.Client.Get(ctx, key, current)).To(Succeed())
	patch := client.MergeFrom(current.DeepCopy())
	current.Annotations = map[string]string{meta.ReconcileRequestAnnotation: "caught-up"}
	g.Expect(env.Client.Patch(ctx, current, patch)).To(Succeed())
	got := waitReady(t, ks, "main@sha1:1a7e")
	g.Expect(got.Status.RenderedArtifact.Revision).To(Equal("main@sha1:1a7e"))
}

// A render failure render-controller writes while a sync of a newer
// render from the feed is under way is not overwritten: the sync's status
// write has the version it read as its precondition, conflicts, and the
// next reconcile decides again from the failure.
func TestARenderFailureWrittenDuringASyncFromTheFeedStays(t *testing.T) {
	g := NewWithT(t)
	f := startFeed(t)
	_, ks, first := syncedFromTheFeed(t, f)

	// The next render's download waits while render-controller writes a
	// failure.
	next := f.record(t, ks, "main@sha1:2222", configMaps(ks.Namespace, "a", "b"))
	release := artifacts.hold(t, next.Artifact.Path)
	f.offer(t, next)
	g.Eventually(func() int { return artifacts.downloads(next.Artifact.Path) }, time.Minute, 10*time.Millisecond).Should(BeNumerically(">=", 1))
	// As render-controller does: the record withdrawn, then the failure
	// written.
	f.feed.Withdraw(next)
	renderFailed(t, ks, "kustomize build failed: boom")
	release()

	failureStays(t, ks, first)
}

// A render failure render-controller wrote after offering a render, in
// sync-controller's cache before the record's withdrawal has come over
// the feed: a reconcile that starts then has no conflict to tell it the
// record is stale, and must not take it over the failure. The record
// names the render status it replaces, the stored one is another, so it
// is dropped and the reconcile decides from the failure; a render
// offered after the failure names it and is taken. The race is made
// deterministic: sync-controller is stopped while its subscriber keeps
// the record, the failure is written with the withdrawal held back, and
// sync-controller starts with the failure in its cache.
func TestARenderFailureInTheCacheBeforeItsWithdrawalStays(t *testing.T) {
	g := NewWithT(t)
	f := startFeed(t)
	ctx, ks, first := syncedFromTheFeed(t, f)
	key := client.ObjectKeyFromObject(ks)

	stopController()
	next := f.record(t, ks, "main@sha1:2222", configMaps(ks.Namespace, "a", "b"))
	f.offer(t, next)
	g.Eventually(func() bool { return f.records.keeps(key) }, time.Minute, 10*time.Millisecond).Should(BeTrue())
	renderFailed(t, ks, "kustomize build failed: boom")
	stopController = startController(func(r *KustomizationReconciler) { r.Renders = f.records })

	failureStays(t, ks, first)
	g.Expect(f.records.keeps(key)).To(BeFalse(), "the record is dropped, as after its withdrawal")
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ks.Namespace, Name: "b"}, &corev1.ConfigMap{})).
		To(Satisfy(apierrors.IsNotFound), "the withdrawn render was not applied")
	f.feed.Withdraw(next)

	// A render offered after the failure names it, and is taken.
	f.offer(t, f.record(t, ks, "main@sha1:3333", configMaps(ks.Namespace, "a", "c")))
	got := waitReady(t, ks, "main@sha1:3333")
	g.Expect(conditions.IsTrue(got, kustomizev1.RenderedCondition)).To(BeTrue())
}

// syncedFromTheFeed creates a Kustomization and has it synced from the
// feed's record of revision main@sha1:1111, which it returns.
func syncedFromTheFeed(t *testing.T, f *feedFixture) (context.Context, *kustomizev1.Kustomization, renderfeed.Record) {
	t.Helper()
	ctx, ks := newKustomization(t, nil)
	key := client.ObjectKeyFromObject(ks)
	NewWithT(t).Eventually(func() bool { return running.renderWaits.waiting(key) }, time.Minute, 10*time.Millisecond).Should(BeTrue())
	first := f.record(t, ks, "main@sha1:1111", configMaps(ks.Namespace, "a"))
	f.offer(t, first)
	waitReady(t, ks, "main@sha1:1111")
	return ctx, ks, first
}

// failureStays waits for ks to show render-controller's failure "boom"
// (renderFailed), and checks that it stays, first's render still the one
// in status and applied.
func failureStays(t *testing.T, ks *kustomizev1.Kustomization, first renderfeed.Record) {
	t.Helper()
	failed := func(g Gomega) {
		got := &kustomizev1.Kustomization{}
		g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(ks), got)).To(Succeed())
		rendered := conditions.Get(got, kustomizev1.RenderedCondition)
		g.Expect(rendered).NotTo(BeNil())
		g.Expect(rendered.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(rendered.Message).To(Equal("kustomize build failed: boom"))
		g.Expect(got.Status.RenderedArtifact.Digest).To(Equal(first.Artifact.Digest), "the last good render stays")
		g.Expect(got.Status.LastAppliedRevision).To(Equal(first.Artifact.Revision))
	}
	waitNotReady(t, ks, kustomizev1.BuildFailedReason)
	NewWithT(t).Eventually(failed, time.Minute, 50*time.Millisecond).Should(Succeed())
	NewWithT(t).Consistently(failed, 2*time.Second, 100*time.Millisecond).Should(Succeed())
}

// renderWaiting reports what render-controller writes while ks's source
// has no artifact yet: Rendered=False at the generation, no render.
func renderWaiting(t *testing.T, ks *kustomizev1.Kustomization) {
	t.Helper()
	current := &kustomizev1.Kustomization{}
	NewWithT(t).Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(ks), current)).To(Succeed())
	status := map[string]any{
		"conditions": []any{map[string]any{
			"type": kustomizev1.RenderedCondition, "status": "False", "reason": meta.DependencyNotReadyReason,
			"message":            fmt.Sprintf("GitRepository %s/repo has no artifact yet", ks.Namespace),
			"observedGeneration": current.Generation,
			"lastTransitionTime": metav1.Now().UTC().Format(time.RFC3339),
		}},
	}
	NewWithT(t).Expect(reconcile.ApplyStatus(context.Background(), env.Client, current, "plumb-render", status)).To(Succeed())
}

// selfApplying is ks's own manifest (as Flux's flux-system Kustomization
// syncs the folder that holds it) beside a ConfigMap: the sync applies
// the Kustomization itself, a write of the object between the run's read
// and its status write, and a label on it, as a kustomization.yaml's
// labels put there.
func selfApplying(ks *kustomizev1.Kustomization) string {
	return fmt.Sprintf(`apiVersion: kustomize.plumb.dev/v1
kind: Kustomization
metadata:
  name: %[2]s
  namespace: %[1]s
  labels: {toolkit.fluxcd.io/tenant: sre-team}
spec:
  interval: 1h0m0s
  prune: true
  timeout: 1m0s
  sourceRef: {kind: GitRepository, name: repo}
---
`, ks.Namespace, ks.Name) + configMaps(ks.Namespace, "a")
}

// A Kustomization that applies itself (Flux's flux-system), created
// before its source had an artifact: render-controller wrote that
// failure; then the good render comes from the feed. The sync's own
// apply of the Kustomization changes the object's version under the run,
// so the status write that carries the render conflicts; the render must
// still reach status with the sync's outcome, not the stored failure.
func TestASelfApplyingKustomizationTakesItsRenderFromTheFeedAfterAFailure(t *testing.T) {
	g := NewWithT(t)
	f := startFeed(t)
	ctx, ks := newKustomization(t, nil)
	key := client.ObjectKeyFromObject(ks)
	renderWaiting(t, ks)
	waitNotReady(t, ks, meta.DependencyNotReadyReason)

	rec := f.record(t, ks, "main@sha1:5e1f", selfApplying(ks))
	f.offer(t, rec)
	got := waitReady(t, ks, "main@sha1:5e1f")
	g.Expect(got.Labels).To(HaveKeyWithValue("toolkit.fluxcd.io/tenant", "sre-team"), "the sync applied the Kustomization itself")
	g.Expect(got.Status.RenderedArtifact).NotTo(BeNil())
	g.Expect(got.Status.RenderedArtifact.Digest).To(Equal(rec.Artifact.Digest))
	rendered := conditions.Get(got, kustomizev1.RenderedCondition)
	g.Expect(rendered).NotTo(BeNil())
	g.Expect(rendered.Status).To(Equal(metav1.ConditionTrue), "Rendered: %s", rendered.Message)
	g.Expect(rendered.Message).To(Equal(rec.Message))
	var ids []string
	for _, e := range got.Status.Inventory.Entries {
		ids = append(ids, e.ID())
	}
	g.Expect(ids).To(ConsistOf(ks.Namespace+"_a__ConfigMap", ks.Namespace+"_app_kustomize.plumb.dev_Kustomization"))

	// And it stays: the record was written, not lost, and no later run
	// mirrors the failure again.
	g.Consistently(func(g Gomega) {
		now := &kustomizev1.Kustomization{}
		g.Expect(env.Client.Get(ctx, key, now)).To(Succeed())
		g.Expect(conditions.IsTrue(now, kustomizev1.RenderedCondition)).To(BeTrue())
		g.Expect(conditions.IsTrue(now, meta.ReadyCondition)).To(BeTrue())
	}, 2*time.Second, 100*time.Millisecond).Should(Succeed())
}

// A conflict's fresh read is compared with the render status the run
// knows without the times: a condition the run set from a record holds
// nanoseconds, the same condition read back from the API server seconds,
// and taking that for render-controller's write would drop the render.
// Any other difference is render-controller's write.
func TestSameRenderStatusLeavesTheTimesOut(t *testing.T) {
	g := NewWithT(t)
	set := time.Date(2026, 12, 7, 11, 0, 0, 123456789, time.UTC)
	run := &renderStatus{
		Artifact: &meta.Artifact{URL: "http://render/a.yaml", Revision: "main@sha1:a", Digest: "sha256:a", LastUpdateTime: metav1.NewTime(set)},
		Rendered: &metav1.Condition{Type: kustomizev1.RenderedCondition, Status: metav1.ConditionTrue, Reason: kustomizev1.RenderSucceededReason,
			Message: "rendered", ObservedGeneration: 2, LastTransitionTime: metav1.NewTime(set)},
	}
	stored := &renderStatus{Artifact: run.Artifact.DeepCopy(), Rendered: run.Rendered.DeepCopy()}
	stored.Artifact.LastUpdateTime = stored.Artifact.LastUpdateTime.Rfc3339Copy()
	stored.Rendered.LastTransitionTime = stored.Rendered.LastTransitionTime.Rfc3339Copy()
	g.Expect(sameRenderStatus(run, stored)).To(BeTrue())

	failed := &renderStatus{Artifact: run.Artifact.DeepCopy(), Rendered: run.Rendered.DeepCopy()}
	failed.Rendered.Status, failed.Rendered.Reason = metav1.ConditionFalse, kustomizev1.BuildFailedReason
	g.Expect(sameRenderStatus(run, failed)).To(BeFalse())
	other := &renderStatus{Artifact: run.Artifact.DeepCopy(), Rendered: run.Rendered.DeepCopy()}
	other.Artifact.Digest = "sha256:b"
	g.Expect(sameRenderStatus(run, other)).To(BeFalse())
	g.Expect(sameRenderStatus(run, nil)).To(BeFalse())
	g.Expect(sameRenderStatus(nil, nil)).To(BeTrue())
}

// A status write carries the render when it changed, decided by the same
// comparison as the conflict's (sameRenderStatus): a render status that
// differs from the stored one only in its times — a condition set in this
// process holds nanoseconds, the stored one seconds — is no change, and
// nothing is written; one with another digest is, and the write carries
// it.
func TestAStatusWriteCarriesARenderOnlyWhenItChanged(t *testing.T) {
	g := NewWithT(t)
	stored := time.Date(2026, 12, 7, 11, 0, 0, 0, time.UTC)
	ks := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web", Generation: 2}}
	ks.Status.ObservedGeneration = 2
	ks.Status.RenderedArtifact = &meta.Artifact{URL: "http://render/a.yaml", Revision: "main@sha1:a", Digest: "sha256:a",
		LastUpdateTime: metav1.NewTime(stored)}
	ks.Status.Conditions = []metav1.Condition{
		{Type: meta.ReadyCondition, Status: metav1.ConditionTrue, Reason: meta.SucceededReason, Message: "applied",
			ObservedGeneration: 2, LastTransitionTime: metav1.NewTime(stored)},
		{Type: kustomizev1.RenderedCondition, Status: metav1.ConditionTrue, Reason: kustomizev1.RenderSucceededReason,
			Message: "rendered", ObservedGeneration: 2, LastTransitionTime: metav1.NewTime(stored)},
	}
	writer := func(change func(*kustomizev1.Kustomization)) (*statusWrite, error) {
		obj := ks.DeepCopy()
		w := newStatusWriter(nil, obj, appOf(obj), obj.DeepCopy(), time.Now())
		change(obj)
		return w.next(appOf(obj).syncStatus())
	}

	sw, err := writer(func(*kustomizev1.Kustomization) {})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(sw).To(BeNil(), "nothing changed")

	sw, err = writer(func(obj *kustomizev1.Kustomization) {
		set := stored.Add(123456789 * time.Nanosecond)
		obj.Status.RenderedArtifact.LastUpdateTime = metav1.NewTime(set)
		conditions.Get(obj, kustomizev1.RenderedCondition).LastTransitionTime = metav1.NewTime(set)
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(sw).To(BeNil(), "a render status that differs only in its times is no change")

	sw, err = writer(func(obj *kustomizev1.Kustomization) { obj.Status.RenderedArtifact.Digest = "sha256:b" })
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(sw).NotTo(BeNil(), "another digest is a change")
	g.Expect(sw.status).To(HaveKeyWithValue("renderedArtifact", HaveKeyWithValue("digest", "sha256:b")))
}
