package live

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
)

func TestASubscriberThatFallsBehindIsDroppedAndTheOthersGetEverything(t *testing.T) {
	g := NewWithT(t)
	h := NewHub()
	slow, endSlow := h.subscribe()
	defer endSlow()
	fast, endFast := h.subscribe()
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
	sub, end := h.subscribe()
	defer end()
	src := make(source, 1)
	done := make(chan struct{})
	go func() { h.Forward(context.Background(), src); close(done) }()
	src <- Change{Kind: "Kustomization", Namespace: "apps", Name: "web", Reason: "DriftDetected"}
	g.Eventually(sub.changes).Should(Receive(HaveField("Reason", "DriftDetected")))
	close(src)
	g.Eventually(done).Should(BeClosed())
}
