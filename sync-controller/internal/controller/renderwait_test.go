package controller

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
)

// The grace runs from the first reconcile that found the object
// unrendered; later reconciles, of the same or a newer generation, do not
// start it again, and a render (forget) does.
func TestTheRenderGraceRunsFromTheFirstWait(t *testing.T) {
	g := NewWithT(t)
	w := &renderWaits{grace: 10 * time.Second}
	key := types.NamespacedName{Namespace: "ns", Name: "app"}
	t0 := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	g.Expect(w.hold(key, t0)).To(Equal(10 * time.Second))
	g.Expect(w.hold(key, t0.Add(4*time.Second))).To(Equal(6*time.Second), "a spec change in between does not restart it")
	g.Expect(w.hold(key, t0.Add(10*time.Second))).To(BeZero())
	g.Expect(w.hold(key, t0.Add(time.Minute))).To(BeZero(), "past the grace the reconcile goes on")
	g.Expect(w.waiting(key)).To(BeTrue())
	w.forget(key)
	g.Expect(w.waiting(key)).To(BeFalse())
	g.Expect(w.hold(key, t0.Add(time.Hour))).To(Equal(10*time.Second), "the next generation's wait starts anew")
}
