package diff

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"plumb.dev/pkg/events"
)

func TestObjectID(t *testing.T) {
	g := NewWithT(t)
	g.Expect(ObjectID(obj(t, deployDesired))).To(Equal("Deployment/shop/web"))
	g.Expect(ObjectID(obj(t, `{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}}`))).To(Equal("Namespace/shop"))
}

func TestToEvents(t *testing.T) {
	g := NewWithT(t)
	res := Diff(obj(t, deployLive), obj(t, deployDesired), nil)
	g.Expect(res.EventChanges()).To(Equal([]events.Change{
		{Object: "Deployment/shop/web", Path: "spec.replicas", Before: "3", After: "1"},
	}))
	g.Expect(res.Paths()).To(Equal([]string{"Deployment/shop/web:spec.replicas"}))
	g.Expect(ToEvents("X/y", nil)).To(BeEmpty())

	long := `"` + strings.Repeat("é", MaxValueLen) + `"`
	ev := ToEvents("ConfigMap/n/c", []Change{{Path: "data.big", Before: long, After: `"small"`}})
	g.Expect(ev[0].After).To(Equal(`"small"`))
	g.Expect(len(ev[0].Before)).To(BeNumerically("<=", MaxValueLen))
	g.Expect(ev[0].Before).To(MatchRegexp(`^"é+… \(1,0\d\d more bytes\)$`))
	g.Expect(strings.ToValidUTF8(ev[0].Before, "?")).To(Equal(ev[0].Before), "cut inside a rune")
}

func TestTruncate(t *testing.T) {
	changes := []Change{{Path: "a"}, {Path: "b"}, {Path: "c"}}
	for _, tc := range []struct {
		max  int
		kept int
		note string
	}{
		{max: 5, kept: 3},
		{max: 3, kept: 3},
		{max: 2, kept: 2, note: "and 1 more change"},
		{max: 1, kept: 1, note: "and 2 more changes"},
		{max: 0, kept: 0, note: "and 3 more changes"},
		{max: -1, kept: 0, note: "and 3 more changes"},
	} {
		g := NewWithT(t)
		kept, note := Truncate(changes, tc.max)
		g.Expect(kept).To(Equal(changes[:tc.kept]))
		g.Expect(note).To(Equal(tc.note))
	}
	g := NewWithT(t)
	ev, note := Truncate(ToEvents("X/y", changes), 1)
	g.Expect(ev).To(Equal([]events.Change{{Object: "X/y", Path: "a"}}))
	g.Expect(note).To(Equal("and 2 more changes"))
}
