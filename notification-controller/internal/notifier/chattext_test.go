package notifier

import (
	"strings"
	"testing"
	"unicode/utf16"

	. "github.com/onsi/gomega"
)

// TestRenderStaysWithinItsLimit: wherever the cut falls, the text is at
// most the limit, ends with the ellipsis, and bold stays balanced.
func TestRenderStaysWithinItsLimit(t *testing.T) {
	g := NewWithT(t)
	lines := alertLines(testEvent())
	for _, m := range []markup{htmlText, markdownText, telegramHTML, plainText} {
		full := m.render(lines, 1<<20)
		size := func(s string) int {
			if m.visible {
				return len(utf16.Encode([]rune(s)))
			}
			return len(s)
		}
		g.Expect(full).NotTo(HaveSuffix(ellipsis))
		for limit := 16; limit < len(full); limit++ {
			out := m.render(lines, limit)
			if m.visible {
				text, err := telegramParse(out)
				g.Expect(err).NotTo(HaveOccurred(), out)
				g.Expect(size(text)).To(BeNumerically("<=", limit), out)
			} else {
				g.Expect(size(out)).To(BeNumerically("<=", limit), out)
			}
			switch {
			case m.bold[0] == "":
			case m.bold[0] == m.bold[1]: // Markdown's ** opens and closes
				g.Expect(strings.Count(out, m.bold[0])%2).To(BeZero(), out)
			default:
				g.Expect(strings.Count(out, m.bold[0])).To(Equal(strings.Count(out, m.bold[1])), out)
			}
			if size(out) < size(full) {
				g.Expect(out).To(Or(HaveSuffix(ellipsis+m.bold[1]), HaveSuffix(ellipsis)))
			}
		}
	}
}
