package message

import (
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxBytes bounds every message a controller writes, in bytes, marker
// included; the package doc says why 4 KiB.
const MaxBytes = 4096

// The marker Truncate appends opens with markerStart and closes with
// markerEnd: "… (12,345 more bytes)".
const (
	markerStart = "… ("
	markerEnd   = " more bytes)"
)

// longestMarker is the length of the longest marker there can be.
var longestMarker = len(marker(math.MaxInt))

// Truncate returns s when it fits in MaxBytes, else its longest prefix that
// ends at a rune boundary and leaves room for a marker saying how many bytes
// were dropped, followed by that marker. The result is valid UTF-8 when s
// is, and never longer than MaxBytes.
func Truncate(s string) string { return TruncateTo(s, MaxBytes) }

// TruncateTo is Truncate with a bound of limit bytes. When limit is too
// small for the marker, the cut text ends with a bare "…", or with nothing
// when even that does not fit.
func TruncateTo(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	limit = max(limit, 0)
	// The marker's length depends on the count it prints; reserving room
	// for the count of all of s makes one pass enough, since the real count
	// is smaller.
	tail := func(int) string { return "" }
	switch {
	case limit >= len(marker(len(s))):
		tail = marker
	case limit >= len("…"):
		tail = func(int) string { return "…" }
	}
	cut := runeStart(s, limit-len(tail(len(s))))
	if i := strings.LastIndex(s[:cut], markerStart); i >= 0 && cut-i < longestMarker && !strings.Contains(s[i:cut], ")") {
		// The cut falls inside the marker of an earlier cut, as when a
		// note is appended to a message read back from status: cut before
		// it rather than keep a stub of it.
		cut = i
	}
	return s[:cut] + tail(len(s)-cut)
}

// Same reports whether stored, a message read back from where it was
// written, says what full says: it is full, or full cut by Truncate. Only
// the count in the marker may differ, and the last few bytes before it: a
// message cut earlier at a larger size (conditions.Set of
// fluxcd/pkg/runtime cuts at 32,768 bytes) is then cut shorter by the
// width of a longer count. It tells a new failure from the same one
// retried.
func Same(stored, full string) bool {
	if stored == full {
		return true
	}
	cut := Truncate(full)
	if cut == full {
		return false
	}
	a, b := kept(stored), kept(cut)
	if len(a) > len(b) {
		a, b = b, a
	}
	return a != "" && strings.HasPrefix(b, a) && len(b)-len(a) <= longestMarker+utf8.UTFMax
}

// kept returns the text of a cut message before its marker, or "" when it
// has none.
func kept(s string) string {
	i := strings.LastIndex(s, markerStart)
	if i < 0 || !strings.HasSuffix(s, markerEnd) {
		return ""
	}
	if strings.Trim(s[i+len(markerStart):len(s)-len(markerEnd)], "0123456789,") != "" {
		return ""
	}
	return s[:i]
}

// runeStart moves i back to the start of the rune it falls in. In text that
// is not valid UTF-8 it gives up after utf8.UTFMax bytes.
func runeStart(s string, i int) int {
	for j := 0; j < utf8.UTFMax && i > 0 && i < len(s) && !utf8.RuneStart(s[i]); j++ {
		i--
	}
	return i
}

// marker says that n bytes were dropped, with thousands separators.
func marker(n int) string {
	return markerStart + group(n) + markerEnd
}

// group writes n with a comma between groups of three digits.
func group(n int) string {
	digits := strconv.Itoa(n)
	var b strings.Builder
	for i, d := range digits {
		if i > 0 && (len(digits)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(d)
	}
	return b.String()
}

// Names returns the first limit of names (object IDs, hooks, elements)
// for a message, and "and N more" in place of the rest, so that a list in
// a status or an event stays short however many there are. names is not
// changed.
func Names(names []string, limit int) []string {
	limit = max(limit, 0)
	if len(names) <= limit {
		return names
	}
	out := make([]string, limit, limit+1)
	copy(out, names)
	return append(out, "and "+strconv.Itoa(len(names)-limit)+" more")
}
