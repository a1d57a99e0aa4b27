package controller

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"plumb.dev/pkg/diff"
	"plumb.dev/pkg/events"
)

func TestEventChangesAreBounded(t *testing.T) {
	g := NewWithT(t)
	g.Expect(eventChanges("Deployment/shop/web", []diff.Change{{Path: "spec.replicas", Before: "3", After: "1"}})).To(Equal([]events.Change{
		{Object: "Deployment/shop/web", Path: "spec.replicas", Before: "3", After: "1"},
	}))
	g.Expect(eventChanges("X/y", nil)).To(BeEmpty())

	long := `"` + strings.Repeat("é", maxEventValueLen) + `"`
	ev := eventChanges("ConfigMap/n/c", []diff.Change{{Path: "data.big", Before: long, After: `"small"`}})
	g.Expect(ev[0].After).To(Equal(`"small"`))
	g.Expect(len(ev[0].Before)).To(BeNumerically("<=", maxEventValueLen))
	g.Expect(ev[0].Before).To(MatchRegexp(`^"é+… \(1,0\d\d more bytes\)$`))
	g.Expect(strings.ToValidUTF8(ev[0].Before, "?")).To(Equal(ev[0].Before), "cut inside a rune")

	shown, note := diff.Truncate(eventChanges("X/y", []diff.Change{{Path: "a"}, {Path: "b"}, {Path: "c"}}), 1)
	g.Expect(shown).To(Equal([]events.Change{{Object: "X/y", Path: "a"}}))
	g.Expect(note).To(Equal("and 2 more changes"))
}
