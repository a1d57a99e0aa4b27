package renderfeed

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"plumb.dev/api/meta"
)

// collector is a Subscriber's Handle and Reset, recording what they got.
type collector struct {
	mu     sync.Mutex
	got    []Record
	resets int
}

func (c *collector) handle(r Record) { c.mu.Lock(); c.got = append(c.got, r); c.mu.Unlock() }
func (c *collector) reset()          { c.mu.Lock(); c.resets++; c.mu.Unlock() }
func (c *collector) records() []Record {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Record(nil), c.got...)
}

func record(origin, name string, gen int64, digest string) Record {
	return Record{Kind: "Kustomization", Namespace: "apps", Name: name, UID: types.UID("uid-" + name), Generation: gen,
		Artifact: &meta.Artifact{URL: origin + "/kustomization/apps/" + name + "/" + digest + ".yaml", Digest: "sha256:" + digest, Revision: "main@sha1:1"},
		Message:  "rendered 4 objects"}
}

func subscribe(t *testing.T, url string) *collector {
	c := &collector{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	s := &Subscriber{URL: url, Handle: c.handle, Reset: c.reset, MinBackoff: 10 * time.Millisecond, Log: logr.Discard()}
	go func() { defer close(done); _ = s.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return c
}

// A subscriber reads the renders pending when it connects, then each
// offer and withdrawal; a record whose artifact is not under the feed's
// address is dropped, as is a render offered again (the same record).
func TestASubscriberReadsTheSnapshotThenEachRender(t *testing.T) {
	g := NewWithT(t)
	feed := &Feed{}
	srv := httptest.NewServer(feed)
	t.Cleanup(srv.Close)
	origin := srv.URL
	_, err := feed.Offer(record(origin, "a", 1, "aa"), time.Now())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(feed.Subscribed()).To(BeFalse())

	c := subscribe(t, srv.URL+Path)
	g.Eventually(c.records, 10*time.Second).Should(HaveLen(1))
	g.Expect(c.records()[0].Name).To(Equal("a"))
	g.Expect(feed.Subscribed()).To(BeTrue())

	first, err := feed.Offer(record(origin, "b", 1, "bb"), time.Now())
	g.Expect(err).NotTo(HaveOccurred())
	again, err := feed.Offer(record(origin, "b", 1, "bb"), first.Add(time.Second))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again).To(Equal(first), "the same render keeps the time it was first offered")
	_, err = feed.Offer(record("http://elsewhere.example", "c", 1, "cc"), time.Now())
	g.Expect(err).NotTo(HaveOccurred())
	feed.Withdraw(record(origin, "a", 1, "aa"))
	g.Eventually(c.records, 10*time.Second).Should(HaveLen(3))
	got := c.records()
	g.Expect(got[1].Name).To(Equal("b"))
	g.Expect(got[2].Name).To(Equal("a"))
	g.Expect(got[2].Withdrawn).To(BeTrue())
	g.Expect(got[2].Artifact).To(BeNil())
	_, _, ok := feed.Pending(types.NamespacedName{Namespace: "apps", Name: "a"})
	g.Expect(ok).To(BeFalse(), "a withdrawn render is no longer pending")
	g.Consistently(c.records, 300*time.Millisecond).Should(HaveLen(3), "the record of another address is dropped")
}

// A record over MaxRecordBytes is refused at the offer: render-controller
// writes that render itself.
func TestARecordOverTheBoundIsRefused(t *testing.T) {
	g := NewWithT(t)
	feed := &Feed{}
	rec := record("http://render", "big", 1, "aa")
	rec.Message = strings.Repeat("x", MaxRecordBytes)
	_, err := feed.Offer(rec, time.Now())
	g.Expect(err).To(MatchError(ContainSubstring("more than 4096")))
	_, _, ok := feed.Pending(rec.Key())
	g.Expect(ok).To(BeFalse())
}

// The feed serves MaxSubscribers at once and answers 503 past them, 405
// to anything but GET; Shutdown ends every stream and the subscriber
// reconnects, reading the snapshot again.
func TestTheFeedIsBounded(t *testing.T) {
	g := NewWithT(t)
	feed := &Feed{MaxSubscribers: 1}
	srv := httptest.NewServer(feed)
	t.Cleanup(srv.Close)
	_, err := feed.Offer(record(srv.URL, "a", 1, "aa"), time.Now())
	g.Expect(err).NotTo(HaveOccurred())
	c := subscribe(t, srv.URL+Path)
	g.Eventually(c.records, 10*time.Second).Should(HaveLen(1))

	resp, err := http.Get(srv.URL + Path)
	g.Expect(err).NotTo(HaveOccurred())
	resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusServiceUnavailable))
	resp, err = http.Post(srv.URL+Path, "application/json", strings.NewReader("{}"))
	g.Expect(err).NotTo(HaveOccurred())
	resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusMethodNotAllowed))

	feed.Shutdown()
	g.Eventually(func() int { c.mu.Lock(); defer c.mu.Unlock(); return c.resets }, 10*time.Second).Should(BeNumerically(">=", 1))
	g.Eventually(c.records, 10*time.Second).Should(HaveLen(2), "the snapshot again after reconnecting")
	g.Expect(c.records()[1].Name).To(Equal("a"))
}

// The same render offered again naming other render statuses it replaces
// (a newer read of its object) is sent again, its grace going on from the
// first offer; offered again as it was, it is not.
func TestTheSameRenderWithANewerReadIsSentAgain(t *testing.T) {
	g := NewWithT(t)
	feed := &Feed{}
	srv := httptest.NewServer(feed)
	t.Cleanup(srv.Close)
	c := subscribe(t, srv.URL+Path)
	g.Eventually(feed.Subscribed, 10*time.Second).Should(BeTrue())

	rec := record(srv.URL, "a", 1, "aa")
	rec.Replaces = []string{StatusDigest(nil, nil)}
	first, err := feed.Offer(rec, time.Now())
	g.Expect(err).NotTo(HaveOccurred())
	again, err := feed.Offer(rec, first.Add(time.Second))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again).To(Equal(first))
	newer := rec
	newer.Replaces = []string{"sha256:" + strings.Repeat("1", 64), StatusDigest(nil, nil)}
	since, err := feed.Offer(newer, first.Add(2*time.Second))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(since).To(Equal(first), "the grace goes on from the first offer")

	g.Eventually(c.records, 10*time.Second).Should(HaveLen(2))
	g.Consistently(c.records, 300*time.Millisecond).Should(HaveLen(2))
	got := c.records()
	g.Expect(got[0].Replaces).To(Equal(rec.Replaces))
	g.Expect(got[1].Replaces).To(Equal(newer.Replaces))
	pending, _, ok := feed.Pending(rec.Key())
	g.Expect(ok).To(BeTrue())
	g.Expect(pending.Replaces).To(Equal(newer.Replaces))
}

// StatusDigest is a render status's identity: the times are left out
// (seconds stored, nanoseconds set), anything else — the artifact's
// digest, the condition's status or message, no render status at all —
// makes another.
func TestStatusDigestLeavesTheTimesOut(t *testing.T) {
	g := NewWithT(t)
	set := time.Date(2026, 12, 7, 11, 0, 0, 123456789, time.UTC)
	a := &meta.Artifact{URL: "http://render/a.yaml", Revision: "main@sha1:a", Digest: "sha256:a", LastUpdateTime: metav1.NewTime(set)}
	c := &metav1.Condition{Type: "Rendered", Status: metav1.ConditionTrue, Reason: "RenderSucceeded", Message: "rendered",
		ObservedGeneration: 2, LastTransitionTime: metav1.NewTime(set)}
	d := StatusDigest(a, c)
	g.Expect(d).To(MatchRegexp(`^sha256:[0-9a-f]{64}$`))

	stored, storedC := a.DeepCopy(), c.DeepCopy()
	stored.LastUpdateTime = stored.LastUpdateTime.Rfc3339Copy()
	storedC.LastTransitionTime = storedC.LastTransitionTime.Rfc3339Copy()
	g.Expect(StatusDigest(stored, storedC)).To(Equal(d))

	other := a.DeepCopy()
	other.Digest = "sha256:b"
	failed := c.DeepCopy()
	failed.Status, failed.Message = metav1.ConditionFalse, "boom"
	for _, s := range []string{StatusDigest(other, c), StatusDigest(a, failed), StatusDigest(a, nil), StatusDigest(nil, c), StatusDigest(nil, nil)} {
		g.Expect(s).NotTo(Equal(d))
	}
}

// The feed's versions read each other's records. A record of this
// version read by a subscriber of the previous one (no Replaces field)
// decodes with the field left out, and is used by that version's rule; a
// record of the previous version, naming nothing it replaces, is taken
// over any stored render status by this one.
func TestRecordsOfEitherVersionAreRead(t *testing.T) {
	g := NewWithT(t)
	rec := record("http://render", "a", 1, "aa")
	rec.Replaces = []string{StatusDigest(nil, nil)}
	line, err := rec.encode()
	g.Expect(err).NotTo(HaveOccurred())
	// The previous version's Record, field for field.
	var previous struct {
		Kind       string         `json:"kind"`
		Namespace  string         `json:"namespace"`
		Name       string         `json:"name"`
		UID        types.UID      `json:"uid"`
		Generation int64          `json:"generation"`
		Artifact   *meta.Artifact `json:"artifact,omitempty"`
		Message    string         `json:"message,omitempty"`
		Withdrawn  bool           `json:"withdrawn,omitempty"`
	}
	g.Expect(json.Unmarshal(line, &previous)).To(Succeed())
	g.Expect(previous.Artifact.Digest).To(Equal(rec.Artifact.Digest))
	g.Expect(previous.UID).To(Equal(rec.UID))

	old, err := json.Marshal(previous)
	g.Expect(err).NotTo(HaveOccurred())
	var read Record
	g.Expect(json.Unmarshal(old, &read)).To(Succeed())
	g.Expect(read.check("http://render")).To(Succeed())
	g.Expect(read.Replaces).To(BeEmpty())
	g.Expect(read.ReplacesStatus(StatusDigest(nil, nil))).To(BeTrue())
	g.Expect(read.ReplacesStatus("sha256:anything")).To(BeTrue())
	g.Expect(rec.ReplacesStatus(StatusDigest(nil, nil))).To(BeTrue())
	g.Expect(rec.ReplacesStatus("sha256:anything")).To(BeFalse())

	rec.Replaces = make([]string, MaxReplaces+1)
	g.Expect(rec.check("http://render")).To(MatchError(ContainSubstring("render statuses it replaces")))
}
