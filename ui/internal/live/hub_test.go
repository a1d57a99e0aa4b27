package live

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
)

func TestASubscriberThatFallsBehindIsDroppedAndTheOthersGetEverything(t *testing.T) {
	g := NewWithT(t)
	h := NewHub()
	slow, endSlow, err := h.subscribe("a")
	g.Expect(err).NotTo(HaveOccurred())
	defer endSlow()
	fast, endFast, err := h.subscribe("b")
	g.Expect(err).NotTo(HaveOccurred())
	defer endFast()

	for i := range BufferSize + 1 {
		h.Publish(Change{Kind: "Kustomization", Namespace: "apps", Name: "web", Reason: Updated})
		if i < BufferSize {
			<-fast.changes // the fast page reads as they come
		}
	}
	g.Expect(slow.overflow).To(BeClosed(), "the change beyond its buffer drops it")
	g.Expect(fast.overflow).NotTo(BeClosed())
	g.Expect(fast.changes).To(Receive(Equal(Change{Kind: "Kustomization", Namespace: "apps", Name: "web", Reason: Updated})))
	h.Publish(Change{Name: "after"})
	g.Expect(fast.changes).To(Receive(HaveField("Name", "after")))
}

type source chan Change

func (s source) Changes() (<-chan Change, func()) { return s, func() {} }

func TestForwardPublishesASourcesChangesUntilItCloses(t *testing.T) {
	g := NewWithT(t)
	h := NewHub()
	sub, end, err := h.subscribe("a")
	g.Expect(err).NotTo(HaveOccurred())
	defer end()
	src := make(source, 1)
	done := make(chan struct{})
	go func() { h.Forward(context.Background(), src); close(done) }()
	src <- Change{Kind: "Kustomization", Namespace: "apps", Name: "web", Reason: "DriftDetected"}
	g.Eventually(sub.changes).Should(Receive(HaveField("Reason", "DriftDetected")))
	close(src)
	g.Eventually(done).Should(BeClosed())
}

func TestStreamsAreBoundedPerOwnerAndInAllAndFreedWhenTheyEnd(t *testing.T) {
	g := NewWithT(t)
	h := NewHub()
	h.max = MaxStreamsPerSession + 2
	var ends []func()
	for range MaxStreamsPerSession {
		_, end, err := h.subscribe("alice")
		g.Expect(err).NotTo(HaveOccurred())
		ends = append(ends, end)
	}
	_, _, err := h.subscribe("alice")
	g.Expect(err).To(MatchError(errTooMany), "one session's fifth")
	for _, owner := range []string{"bob", "carol"} {
		_, end, err := h.subscribe(owner)
		g.Expect(err).NotTo(HaveOccurred(), "another session has its own")
		defer end()
	}
	_, _, err = h.subscribe("dave")
	g.Expect(err).To(MatchError(errTooMany), "beyond the bound of all")

	ends[0]()
	ends[0]() // ending twice frees one place
	_, end, err := h.subscribe("alice")
	g.Expect(err).NotTo(HaveOccurred(), "an ended stream's place is free again")
	end()
	g.Expect(h.open).To(HaveKeyWithValue("alice", MaxStreamsPerSession-1))
}
