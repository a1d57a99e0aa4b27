package notifier

import (
	"strings"
	"unicode/utf16"

	"plumb.dev/pkg/events"
)

// line is one line of an alert as chat services show it: a bold part (the
// heading, a fact's title) and plain text after it.
type line struct{ bold, text string }

// alertLines is an event as lines: the heading (the severity's emoji, the
// object and the reason), the message, then the facts.
func alertLines(e events.Event) []line {
	lines := []line{{bold: heading(e)}}
	if e.Message != "" {
		lines = append(lines, line{text: e.Message})
	}
	for _, f := range facts(e) {
		sep := ": "
		if strings.Contains(f.Value, "\n") {
			sep = ":\n"
		}
		lines = append(lines, line{bold: f.Title + sep, text: f.Value})
	}
	return lines
}

// heading is the first line of an alert: 🚨 for errors, 💫 otherwise, like
// Flux's chat messages.
func heading(e events.Event) string {
	emoji := "💫"
	if e.Severity == events.SeverityError {
		emoji = "🚨"
	}
	h := emoji + " " + objectTitle(e)
	if e.Reason != "" {
		h += ": " + e.Reason
	}
	return h
}

// markup is how a chat service formats text.
type markup struct {
	// escape returns a rune as the markup shows it literally; nil keeps
	// every rune as it is (plain text).
	escape func(rune) string
	// bold opens and closes bold text.
	bold [2]string
	// newline is a line break.
	newline string
	// visible makes limits count what the reader sees, in UTF-16 code
	// units (Telegram counts "characters after entity parsing"), rather
	// than the bytes sent.
	visible bool
}

var (
	plainText = markup{newline: "\n"}
	// telegramHTML is Telegram's parse_mode HTML: <, > and & as entities.
	telegramHTML = markup{escape: htmlRune, bold: [2]string{"<b>", "</b>"}, newline: "\n", visible: true}
	// htmlText is HTML for Matrix's formatted_body and Google Chat cards.
	htmlText = markup{escape: htmlRune, bold: [2]string{"<b>", "</b>"}, newline: "<br>"}
	// markdownText is the Markdown of Webex and Zulip.
	markdownText = markup{escape: markdownRune, bold: [2]string{"**", "**"}, newline: "\n"}
)

func htmlRune(r rune) string {
	switch r {
	case '<':
		return "&lt;"
	case '>':
		return "&gt;"
	case '&':
		return "&amp;"
	case '"':
		return "&quot;"
	}
	return string(r)
}

// markdownRune escapes the characters that start emphasis, code, links,
// headings and quotes, with the backslash both Webex and Zulip honour.
func markdownRune(r rune) string {
	if strings.ContainsRune("\\`*_[]#>", r) {
		return `\` + string(r)
	}
	return string(r)
}

// ellipsis ends a text cut to its limit.
const ellipsis = "…"

// render writes lines in m, at most limit long (bytes, or visible UTF-16
// units), cut with an ellipsis when the alert is longer. Bold stays
// balanced when the cut falls inside it.
func (m markup) render(lines []line, limit int) string {
	r := renderer{m: m, limit: limit}
	for i, l := range lines {
		if i > 0 && !r.write(m.newline, 1) {
			break
		}
		if l.bold != "" && !r.span(l.bold, true) {
			break
		}
		if l.text != "" && !r.span(l.text, false) {
			break
		}
	}
	return r.b.String()
}

type renderer struct {
	m     markup
	limit int
	used  int
	b     strings.Builder
	done  bool
}

// cost is what s counts against the limit: its bytes, or visible units.
func (r *renderer) cost(s string, visible int) int {
	if r.m.visible {
		return visible
	}
	return len(s)
}

// write appends s when it fits with room left for the ellipsis.
func (r *renderer) write(s string, visible int) bool {
	if r.done {
		return false
	}
	if r.used+r.cost(s, visible)+r.cost(ellipsis, 1) > r.limit {
		r.b.WriteString(ellipsis)
		r.done = true
		return false
	}
	r.b.WriteString(s)
	r.used += r.cost(s, visible)
	return true
}

// span writes text, escaped, in bold or not; false once the limit is hit.
func (r *renderer) span(text string, bold bool) bool {
	closing := ""
	if bold && r.m.bold[0] != "" {
		// Room for the closing tag is kept from the opening tag on.
		closing = r.m.bold[1]
		r.limit -= r.cost(closing, 0)
		if !r.write(r.m.bold[0], 0) {
			r.limit += r.cost(closing, 0)
			return false
		}
		defer func() {
			r.limit += r.cost(closing, 0)
			r.b.WriteString(closing)
			r.used += r.cost(closing, 0)
		}()
	}
	for _, c := range text {
		s := string(c)
		switch {
		case c == '\n':
			s = r.m.newline
		case r.m.escape != nil:
			s = r.m.escape(c)
		}
		if !r.write(s, utf16.RuneLen(c)) {
			return false
		}
	}
	return true
}
