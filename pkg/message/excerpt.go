package message

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxExcerptBytes bounds what a message quotes of a remote's answer
// (Excerpt): room for a registry's or a Git host's error in a sentence
// ("manifest unknown", "Repository not found."), not for the HTML page or
// the stack trace a server may send instead.
const MaxExcerptBytes = 256

// Excerpt is what a message may quote of a remote's answer, an error body
// above all: its printable text with every run of whitespace (newlines
// included) made one space, cut to MaxExcerptBytes with Truncate's marker.
// Dropped: ANSI escape sequences, every other control character, invalid
// UTF-8, what unicode.IsPrint refuses (format characters such as
// bidirectional overrides), and backslashes, so that a client decoding the
// excerpt as a JSON error document (a registry client does) cannot turn
// an escape such as \u001b back into a control character. The caller
// bounds what it reads: Excerpt looks at all of b.
func Excerpt(b []byte) string {
	var out strings.Builder
	space := false
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == 0x1b && i+1 < len(b) && (b[i+1] == '[' || b[i+1] == ']') {
			i += 2 + escapeLength(b[i+2:], b[i+1])
			continue
		}
		i += size
		switch {
		case unicode.IsSpace(r):
			space = out.Len() > 0
		case r == utf8.RuneError, r == '\\', !unicode.IsPrint(r):
		default:
			if space {
				out.WriteByte(' ')
				space = false
			}
			out.WriteRune(r)
		}
	}
	return TruncateTo(out.String(), MaxExcerptBytes)
}

// escapeLength is the length of the rest of an ANSI escape sequence after
// its ESC and introducer: a CSI ("ESC [") ends with a byte from @ to ~, an
// OSC ("ESC ]", a terminal title or hyperlink) with BEL or ESC \.
func escapeLength(b []byte, introducer byte) int {
	for j, c := range b {
		switch {
		case introducer == '[' && c >= 0x40 && c <= 0x7e:
			return j + 1
		case introducer == ']' && c == 0x07:
			return j + 1
		case introducer == ']' && c == 0x1b && j+1 < len(b) && b[j+1] == '\\':
			return j + 2
		}
	}
	return len(b)
}
