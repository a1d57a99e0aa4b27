package renderfeed

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
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
