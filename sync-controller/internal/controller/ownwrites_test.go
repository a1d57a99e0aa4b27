package controller

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
)

// A reconcile reads the API server only while a write of its own is not
// in the cache: from the write until the cache takes in its version, also
// when the watch delivered that version before the write's response was
// back; a version it never takes in (a relist skipped it) keeps the reads
// uncached until the next write, never the other way round.
func TestOwnWritesArePendingUntilTheCacheHasThem(t *testing.T) {
	g := NewWithT(t)
	key := types.NamespacedName{Namespace: "ns", Name: "app"}
	var w ownWrites
	g.Expect(w.pending(key)).To(BeFalse(), "nothing written")

	w.writing(key)
	w.wrote(key, "10")
	g.Expect(w.pending(key)).To(BeTrue())
	w.seen(key, "9")
	g.Expect(w.pending(key)).To(BeTrue(), "an older version")
	w.seen(key, "10")
	g.Expect(w.pending(key)).To(BeFalse())
	w.seen(key, "11")
	g.Expect(w.pending(key)).To(BeFalse(), "a later version holds it too")

	w.writing(key)
	w.seen(key, "12") // the watch was quicker than the response,
	w.seen(key, "13") // and another write followed
	w.wrote(key, "12")
	g.Expect(w.pending(key)).To(BeFalse())

	w.writing(key)
	w.wrote(key, "") // nothing written
	g.Expect(w.pending(key)).To(BeFalse())

	w.writing(key)
	w.wrote(key, "14")
	w.seen(key, "15") // 14 skipped by a relist
	g.Expect(w.pending(key)).To(BeTrue())
	w.writing(key)
	w.wrote(key, "16")
	w.seen(key, "16")
	g.Expect(w.pending(key)).To(BeFalse())

	w.writing(key)
	w.wrote(key, "17")
	w.forget(key)
	g.Expect(w.pending(key)).To(BeFalse(), "gone from the cache")
}
