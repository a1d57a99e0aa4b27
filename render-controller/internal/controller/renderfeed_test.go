package controller

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/renderfeed"
)

// testRenderGrace is the suite's grace for a render offered on the feed:
// short, so that the test of a render nobody takes ends soon.
const testRenderGrace = 3 * time.Second

// feedReader is a subscriber of the suite's feed, keeping what it reads.
type feedReader struct {
	mu   sync.Mutex
	recs []renderfeed.Record
	stop func()
}

// readFeed subscribes to the suite's render feed until the test ends or
// it calls the reader's stop.
func readFeed(t *testing.T) *feedReader {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+storage.Hostname+renderfeed.Path, nil)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	resp, err := http.DefaultClient.Do(req)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	NewWithT(t).Expect(resp.StatusCode).To(Equal(http.StatusOK))
	r := &feedReader{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			if line == "" {
				continue
			}
			var rec renderfeed.Record
			if json.Unmarshal([]byte(line), &rec) == nil {
				r.mu.Lock()
				r.recs = append(r.recs, rec)
				r.mu.Unlock()
			}
		}
	}()
	var once sync.Once
	r.stop = func() {
		once.Do(func() {
			cancel()
			resp.Body.Close()
			<-done
			NewWithT(t).Eventually(feed.Subscribed, timeout, poll).Should(BeFalse())
		})
	}
	t.Cleanup(r.stop)
	NewWithT(t).Eventually(feed.Subscribed, timeout, poll).Should(BeTrue())
	return r
}

// of returns the records read of the object ns/name.
func (r *feedReader) of(ns, name string) []renderfeed.Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []renderfeed.Record
	for _, rec := range r.recs {
		if rec.Namespace == ns && rec.Name == name {
			out = append(out, rec)
		}
	}
	return out
}

// While a sync-controller reads the feed, a good render is offered there
// and not written to status (sync-controller writes it with its sync's
// outcome); once no sync-controller reads it, render-controller writes
// the render itself within a grace, so that renders still show with
// sync-controller down. A failure is written at once.
func TestWithASubscriberARenderIsOfferedThenWrittenAfterTheGrace(t *testing.T) {
	g := NewWithT(t)
	fr := readFeed(t)
	ns := namespace(t)
	gitRepo(t, ns, "repo", nil)
	publishTree(t, ns, "repo", "dddddddddddddddddddddddddddddddddddddddd", map[string]string{"a.yaml": cm("one", "a: b")})
	ks := kustomization(t, ns, "app", "repo", nil)
	offeredAt := time.Now()

	g.Eventually(func() []renderfeed.Record { return fr.of(ns, "app") }, timeout, poll).Should(HaveLen(1))
	rec := fr.of(ns, "app")[0]
	current := getKS(g, ns, "app")
	g.Expect(rec.Kind).To(Equal(kustomizev1.KustomizationKind))
	g.Expect(rec.UID).To(Equal(current.UID))
	g.Expect(rec.Generation).To(Equal(current.Generation))
	g.Expect(rec.Artifact).NotTo(BeNil())
	g.Expect(rec.Artifact.Revision).To(Equal("main@sha1:dddddddddddddddddddddddddddddddddddddddd"))
	g.Expect(rec.Artifact.URL).To(HavePrefix("http://" + storage.Hostname + "/"))
	g.Expect(rec.Message).To(Equal(`rendered 1 objects from revision "main@sha1:dddddddddddddddddddddddddddddddddddddddd"`))
	g.Expect(download(t, rec.Artifact)).To(ContainSubstring("name: one"))

	// Not written while the grace lasts (half of it, on the clock of the
	// offer: a loaded machine may have used some of it already).
	if wait := testRenderGrace/2 - time.Since(offeredAt); wait > 0 {
		g.Consistently(func(g Gomega) {
			got := getKS(g, ns, "app")
			g.Expect(got.Status.RenderedArtifact).To(BeNil())
			g.Expect(renderedCondition(got)).To(BeNil())
		}, wait, poll).Should(Succeed())
	}
	// The subscriber goes without taking it: render-controller writes it
	// at the end of the grace.
	fr.stop()
	got := waitRevision(t, ns, "app", "main@sha1:dddddddddddddddddddddddddddddddddddddddd")
	g.Expect(got.Status.RenderedArtifact.Digest).To(Equal(rec.Artifact.Digest))
	_, _, pending := feed.Pending(client.ObjectKeyFromObject(ks))
	g.Expect(pending).To(BeFalse(), "the write withdraws the record")

	// A failure is written at once.
	publishTree(t, ns, "repo", "eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee", map[string]string{"kustomization.yaml": "resources: [gone.yaml]\n"})
	failed := waitRendered(t, ns, "app", metav1.ConditionFalse, kustomizev1.BuildFailedReason)
	g.Expect(failed.Status.RenderedArtifact.Digest).To(Equal(rec.Artifact.Digest), "the last good render stays")
}

// A render offered on the feed names the render status it replaces
// (renderfeed.Record.Replaces), so that sync-controller takes it over
// no write of render-controller's made after the offer: the status its
// reconcile read — none for a new Kustomization, the failure written at
// once before the fix — by the digest sync-controller computes from the
// object it reads.
func TestARenderOfferedNamesTheRenderStatusItReplaces(t *testing.T) {
	g := NewWithT(t)
	fr := readFeed(t)
	ns := namespace(t)
	gitRepo(t, ns, "repo", nil)
	publishTree(t, ns, "repo", "1111111111111111111111111111111111111111", map[string]string{"a.yaml": cm("one", "a: b")})
	kustomization(t, ns, "app", "repo", nil)
	g.Eventually(func() []renderfeed.Record { return fr.of(ns, "app") }, timeout, poll).Should(HaveLen(1))
	g.Expect(fr.of(ns, "app")[0].Replaces).To(Equal([]string{renderfeed.StatusDigest(nil, nil)}))

	publishTree(t, ns, "repo", "2222222222222222222222222222222222222222", map[string]string{"kustomization.yaml": "resources: [gone.yaml]\n"})
	failed := waitRendered(t, ns, "app", metav1.ConditionFalse, kustomizev1.BuildFailedReason)
	publishTree(t, ns, "repo", "3333333333333333333333333333333333333333", map[string]string{"a.yaml": cm("one", "a: c")})
	var fixed renderfeed.Record
	g.Eventually(func(g Gomega) {
		recs := fr.of(ns, "app")
		g.Expect(len(recs)).To(BeNumerically(">=", 3))
		fixed = recs[len(recs)-1]
		g.Expect(fixed.Withdrawn).To(BeFalse())
		g.Expect(fixed.Artifact.Revision).To(Equal("main@sha1:3333333333333333333333333333333333333333"))
	}, timeout, poll).Should(Succeed())
	g.Expect(fixed.Replaces).To(ContainElement(renderfeed.StatusDigest(failed.Status.RenderedArtifact, renderedCondition(failed))))
	g.Expect(fixed.Replaces).NotTo(ContainElement(renderfeed.StatusDigest(nil, nil)))
}

// The render status render-controller wrote itself last is named beside
// the one read, which its cache may not have yet (read, below, is the
// status before the write): sync-controller's stored status is the
// write, and the record must name it to be taken. A write to another
// object of the same name (another UID) is not named.
func TestARecordNamesTheLastWriteEvenBeforeTheCacheHasIt(t *testing.T) {
	g := NewWithT(t)
	r := &KustomizationReconciler{}
	read := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web", UID: "uid-1", Generation: 2}}
	g.Expect(r.replaces(read)).To(Equal([]string{renderStatusDigest(read)}))

	wrote := read.DeepCopy()
	conditions.MarkFalse(wrote, kustomizev1.RenderedCondition, kustomizev1.BuildFailedReason, "boom")
	r.wroteRender(wrote)
	g.Expect(r.replaces(read)).To(Equal([]string{renderStatusDigest(wrote), renderStatusDigest(read)}))
	g.Expect(r.replaces(wrote)).To(Equal([]string{renderStatusDigest(wrote)}), "the cache has it: named once")

	other := read.DeepCopy()
	other.UID = "uid-2"
	g.Expect(r.replaces(other)).To(Equal([]string{renderStatusDigest(other)}))
}

// While a sync-controller is subscribed, a render it has not taken yet is
// not reconciled again every grace: it waits on the feed for as long as
// sync-controller's queue is long, in proportion to a fleet created at
// once, and each of those reconciles was work for nothing (docs/bench/
// fleet.md, "Fleet runs S1–S3"). sync-controller's status write taking
// the render is what ends the wait: it drops the pending record.
func TestAnOfferedRenderIsNotReconciledEveryGraceAndIsTakenOnTheStatusWrite(t *testing.T) {
	g := NewWithT(t)
	fr := readFeed(t)
	ns := namespace(t)
	gitRepo(t, ns, "repo", nil)
	publishTree(t, ns, "repo", "abababababababababababababababababababab", map[string]string{"a.yaml": cm("one", "a: b")})
	ks := kustomization(t, ns, "app", "repo", nil)
	key := client.ObjectKeyFromObject(ks)
	g.Eventually(func() []renderfeed.Record { return fr.of(ns, "app") }, timeout, poll).Should(HaveLen(1))
	rec := fr.of(ns, "app")[0]

	// Three graces and more with the render on the feed: it is looked at
	// at 1 and 2 graces from the offer (nextLook, whose schedule
	// TestAWaitingRenderIsLookedAtAtDoublingGraces pins: the reconciles
	// of the kind count the other tests' waiting renders too), and stays
	// offered, not written.
	time.Sleep(3*(testRenderGrace+time.Second) + time.Second)
	_, _, pending := feed.Pending(key)
	g.Expect(pending).To(BeTrue(), "still offered, not written")
	g.Expect(getKS(g, ns, "app").Status.RenderedArtifact).To(BeNil())

	// sync-controller takes it: its status write carries the render.
	syncStatus := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": kustomizev1.GroupVersion.String(), "kind": kustomizev1.KustomizationKind,
		"metadata": map[string]any{"name": "app", "namespace": ns},
		"status": map[string]any{
			"renderedArtifact": map[string]any{
				"path": rec.Artifact.Path, "url": rec.Artifact.URL, "revision": rec.Artifact.Revision,
				"digest": rec.Artifact.Digest, "size": *rec.Artifact.Size, "lastUpdateTime": rec.Artifact.LastUpdateTime.UTC().Format(time.RFC3339),
			},
			"conditions": []any{map[string]any{
				"type": kustomizev1.RenderedCondition, "status": "True", "reason": kustomizev1.RenderSucceededReason, "message": rec.Message,
				"observedGeneration": rec.Generation, "lastTransitionTime": "2026-01-01T00:00:00Z",
			}},
		},
	}}
	g.Expect(k8s.Status().Apply(context.Background(), client.ApplyConfigurationFromUnstructured(syncStatus), client.FieldOwner("plumb-sync"), client.ForceOwnership)).To(Succeed())
	// Taken on that write's event: the reconcile at the end of the
	// subscribed grace, 30 s after the offer, would write and withdraw it
	// instead, and that write would be render-controller's.
	g.Eventually(func() bool { _, _, ok := feed.Pending(key); return ok }, timeout, poll).Should(BeFalse(), "the status write takes the record off the feed")
	for _, m := range getKS(g, ns, "app").ManagedFields {
		g.Expect(m.Manager == FieldManager && m.Subresource == "status").To(BeFalse(), "render-controller wrote no status of its own")
	}
	got := getKS(g, ns, "app")
	g.Expect(got.Status.RenderedArtifact.Digest).To(Equal(rec.Artifact.Digest))
}

// A render waiting on a subscribed feed is looked at again at 1, 2, 4 and
// 8 graces from its offer, then at the end of the ten, when
// render-controller writes it.
func TestAWaitingRenderIsLookedAtAtDoublingGraces(t *testing.T) {
	g := NewWithT(t)
	grace := 30 * time.Second
	var looks []time.Duration
	for elapsed := time.Duration(0); elapsed < subscribedGraceFactor*grace; {
		elapsed += nextLook(elapsed, grace)
		looks = append(looks, elapsed.Round(time.Second))
	}
	g.Expect(looks).To(Equal([]time.Duration{31 * time.Second, 61 * time.Second, 121 * time.Second, 241 * time.Second, 301 * time.Second}))
}
