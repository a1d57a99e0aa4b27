package objectset

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	. "github.com/onsi/gomega"

	setv1 "plumb.dev/api/set/v1"
)

// status.elementDetails stays bounded whatever the generators give: the
// first MaxElementDetails elements, each one's values cut at
// MaxElementValuesBytes on a character boundary, each with its objects.
func TestElementDetailsAreBounded(t *testing.T) {
	g := NewWithT(t)
	set := newSet("apps", "many", `
apiVersion: v1
kind: ConfigMap
metadata:
  name: cm-{{ .i }}
`)
	var els []Element
	for i := range setv1.MaxElementDetails + 5 {
		els = append(els, Element{"i": i, "note": strings.Repeat("é", 300)})
	}
	out, err := renderAll(set, els, false)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out.objects).To(HaveLen(setv1.MaxElementDetails + 5))
	g.Expect(out.elements).To(HaveLen(setv1.MaxElementDetails))
	for i, d := range out.elements {
		g.Expect(d.Objects).To(Equal([]string{fmt.Sprintf("ConfigMap/apps/cm-%d", i)}))
		g.Expect(utf8.ValidString(d.Values)).To(BeTrue(), d.Values)
		g.Expect(len(d.Values)).To(BeNumerically("<=", setv1.MaxElementValuesBytes+len("…")))
		g.Expect(d.Values).To(HavePrefix(`{"i":%d,"note":"éé`, i))
		g.Expect(d.Values).To(HaveSuffix("…"))
	}
	g.Expect(elementValues(Element{"env": "dev"})).To(Equal(`{"env":"dev"}`))
}
