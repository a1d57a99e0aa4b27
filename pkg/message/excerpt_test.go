package message

import (
	"strings"
	"testing"
	"unicode"
)

func TestExcerpt(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"manifest unknown", "manifest unknown"},
		{"  Repository\r\n  not\tfound.\n", "Repository not found."},
		{"\x1b[31;1mred\x1b[0m and \x1b]0;title\x07plain \x1b]8;;http://x\x1b\\link", "red and plain link"},
		{"bell\x07 nul\x00 del\x7f c1\u0085 bidi\u202Eevil", "bell nul del c1 bidievil"},
		{`{"errors":[{"message":"\u001b[2Jgone"}]}`, `{"errors":[{"message":"u001b[2Jgone"}]}`},
		{"bad \xff\xfe utf-8 ünïcode", "bad utf-8 ünïcode"},
		{"\x1b[", ""},
	} {
		if got := Excerpt([]byte(tc.in)); got != tc.want {
			t.Errorf("Excerpt(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// A long answer is cut to MaxExcerptBytes with a marker, and what is kept
// is printable text only.
func TestExcerptOfALongHostileBody(t *testing.T) {
	body := []byte(strings.Repeat("\x1b[5mBLINK\x1b[0m\r\n\x00\x08junk é ", 50_000))
	got := Excerpt(body)
	if len(got) > MaxExcerptBytes {
		t.Fatalf("%d bytes, more than %d", len(got), MaxExcerptBytes)
	}
	if !strings.HasPrefix(got, "BLINK junk é BLINK") || !strings.HasSuffix(got, " more bytes)") {
		t.Errorf("got %q", got)
	}
	for _, r := range got {
		if !unicode.IsPrint(r) {
			t.Fatalf("%q holds %U", got, r)
		}
	}
}
