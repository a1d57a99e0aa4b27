package diff

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestPaths(t *testing.T) {
	g := NewWithT(t)
	res := Diff(obj(t, deployLive), obj(t, deployDesired), nil)
	g.Expect(res.Object).To(Equal("Deployment/shop/web"))
	g.Expect(res.Paths()).To(Equal([]string{"Deployment/shop/web:spec.replicas"}))
	ns := obj(t, `{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}}`)
	g.Expect(Diff(nil, ns, nil).Object).To(Equal("Namespace/shop"))
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
}
