package message

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	. "github.com/onsi/gomega"
)

// markerRE matches the marker at the end of a cut message.
var markerRE = regexp.MustCompile(`… \(([0-9,]+) more bytes\)$`)

// split takes a cut message apart into the text kept and the count its
// marker reports; ok is false when there is no marker.
func split(t testing.TB, cut string) (kept string, dropped int, ok bool) {
	t.Helper()
	m := markerRE.FindStringSubmatchIndex(cut)
	if m == nil {
		return cut, 0, false
	}
	n, err := strconv.Atoi(strings.ReplaceAll(cut[m[2]:m[3]], ",", ""))
	if err != nil {
		t.Fatalf("marker count in %q: %v", cut[m[0]:], err)
	}
	return cut[:m[0]], n, true
}

// checkCut asserts what holds for every message Truncate cuts: within
// MaxBytes, a prefix of the input followed by a marker counting exactly the
// bytes dropped.
func checkCut(t testing.TB, in, out string) {
	t.Helper()
	if len(out) > MaxBytes {
		t.Fatalf("%d bytes, more than %d", len(out), MaxBytes)
	}
	kept, dropped, ok := split(t, out)
	if !ok {
		t.Fatalf("no marker at the end of %q", out[max(0, len(out)-60):])
	}
	if !strings.HasPrefix(in, kept) {
		t.Fatalf("the text kept is not a prefix of the input")
	}
	if len(kept)+dropped != len(in) {
		t.Fatalf("kept %d bytes and reports %d more, of %d", len(kept), dropped, len(in))
	}
}

func TestTruncateLeavesMessagesThatFitAlone(t *testing.T) {
	for _, s := range []string{
		"",
		"rendered 3 objects from revision \"main@sha1:abc\"",
		strings.Repeat("x", MaxBytes),
		strings.Repeat("é", MaxBytes/2),
		strings.Repeat("x", MaxBytes-20) + "… (12 more bytes)",
	} {
		NewWithT(t).Expect(Truncate(s)).To(BeIdenticalTo(s))
	}
}

func TestTruncateCutsLongMessagesWithAMarker(t *testing.T) {
	tests := []struct {
		name string
		in   string
		// want is the expected end of the result.
		want string
	}{
		{"one byte over", strings.Repeat("x", MaxBytes+1), "x… (23 more bytes)"},
		{"an 80 KB render error", "kustomize build failed: " + strings.Repeat("p", 80_000), "p… (75,951 more bytes)"},
		{"thousands and millions", strings.Repeat("y", 1_234_567+MaxBytes-22), "y… (1,234,571 more bytes)"},
		// Two-byte runes: an even cut would land inside one.
		{"two-byte runes", strings.Repeat("é", 3*MaxBytes), "é… (20,504 more bytes)"},
		{"three-byte runes", strings.Repeat("€", MaxBytes), "€… (8,217 more bytes)"},
		{"four-byte runes", strings.Repeat("🦀", MaxBytes), "🦀… (12,312 more bytes)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			out := Truncate(tt.in)
			checkCut(t, tt.in, out)
			g.Expect(utf8.ValidString(out)).To(BeTrue())
			g.Expect(out).To(HaveSuffix(tt.want))
			// The room reserved for the longest count and a rune cut in two
			// are all that go unused.
			g.Expect(len(out)).To(BeNumerically(">", MaxBytes-12))
		})
	}
}

// A message read back from status (already cut) with a note appended, as
// sync-controller writes Ready from render-controller's Rendered: cut again,
// it holds one whole marker, not a stub of the first one.
func TestTruncateAgainAfterANoteKeepsOneMarker(t *testing.T) {
	g := NewWithT(t)
	rendered := Truncate("kustomize build failed: " + strings.Repeat("p", 40_000))
	ready := rendered + " (still applying the last good revision main@sha1:" + strings.Repeat("a", 40) + ")"
	out := Truncate(ready)
	checkCut(t, ready, out)
	g.Expect(strings.Count(out, markerStart)).To(Equal(1), out[len(out)-80:])
	kept, _, _ := split(t, rendered)
	g.Expect(out).To(HavePrefix(kept))
}

// Text that only looks like an earlier marker near the cut costs at most a
// marker's length of text.
func TestTruncateOfAFakeMarkerDropsLittle(t *testing.T) {
	in := strings.Repeat("z", MaxBytes-30) + "… (" + strings.Repeat("9", 100)
	out := Truncate(in)
	checkCut(t, in, out)
	NewWithT(t).Expect(len(out)).To(BeNumerically(">", MaxBytes-2*longestMarker))
}

func TestTruncateToSmallBounds(t *testing.T) {
	in := "héllo wörld, and a good deal more"
	for _, tt := range []struct {
		limit int
		want  string
	}{
		{-1, ""},
		{0, ""},
		{2, "h"},
		{3, "…"},
		{4, "h…"},
		{5, "h…"}, // "é" needs two bytes
		{18, "héllo wörld, …"},
		{19, "… (35 more bytes)"},
		{21, "h… (34 more bytes)"},
		{22, "hé… (32 more bytes)"},
		{32, "héllo wörld… (22 more bytes)"},
		{len(in), in},
	} {
		out := TruncateTo(in, tt.limit)
		g := NewWithT(t)
		g.Expect(out).To(Equal(tt.want), "limit %d", tt.limit)
		g.Expect(len(out)).To(BeNumerically("<=", max(tt.limit, 0)))
	}
}

// Same tells the message read back from status after a retry of the same
// failure from a new failure, whatever cut it on the way.
func TestSame(t *testing.T) {
	long := "kustomize build failed: " + strings.Repeat("p", 80_000)
	// conditions.Set of fluxcd/pkg/runtime cuts at 32,768 bytes first.
	fluxCut := long[:32_765] + "..."
	for _, tt := range []struct {
		name         string
		stored, full string
		want         bool
	}{
		{"a short message as written", "rendered 3 objects", "rendered 3 objects", true},
		{"another short message", "rendered 3 objects", "rendered 4 objects", false},
		{"a long message as cut", Truncate(long), long, true},
		{"cut after an earlier cut", Truncate(fluxCut), long, true},
		{"cut, and the rest grew", Truncate(long), long + strings.Repeat("q", 5_000_000), true},
		{"another long message", Truncate(long), "kustomize build failed: " + strings.Repeat("q", 80_000), false},
		{"a long message, not cut", long, long[:70_000], false},
		{"a short one with a marker of its own", "kustomize build… (5 more bytes)", long, false},
		{"a short message that was long", Truncate(long), "kustomize build failed", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(Same(tt.stored, tt.full)).To(Equal(tt.want))
		})
	}
}

func TestGroup(t *testing.T) {
	for n, want := range map[int]string{0: "0", 7: "7", 999: "999", 1000: "1,000", 12345: "12,345", 1234567: "1,234,567"} {
		NewWithT(t).Expect(group(n)).To(Equal(want))
	}
}

// FuzzTruncate: whatever the text, the result fits in MaxBytes, is valid
// UTF-8 when the input is, leaves a short input as it is, and otherwise
// keeps a prefix of it and counts what it dropped.
func FuzzTruncate(f *testing.F) {
	f.Add("short", 0)
	f.Add("é", MaxBytes)
	f.Add("🦀x", MaxBytes)
	f.Add("… (1", MaxBytes/4)
	f.Add(string([]byte{0xff, 0x80, 0x80, 0x80}), MaxBytes)
	f.Fuzz(func(t *testing.T, unit string, repeat int) {
		// Repeat the unit to reach the sizes where cutting happens.
		if repeat < 0 || repeat > 4*MaxBytes || len(unit)*repeat > 1<<20 {
			return
		}
		in := unit + strings.Repeat(unit, repeat)
		out := Truncate(in)
		if len(in) <= MaxBytes {
			if out != in {
				t.Fatalf("changed a message of %d bytes", len(in))
			}
			return
		}
		checkCut(t, in, out)
		if utf8.ValidString(in) && !utf8.ValidString(out) {
			t.Fatalf("cut valid UTF-8 into invalid: %q", out[max(0, len(out)-40):])
		}
		if again := Truncate(out); again != out {
			t.Fatalf("cutting twice changed the message")
		}
		if !Same(out, in) {
			t.Fatalf("the cut message is not the same as the input")
		}
	})
}

func TestStripUserInfoTakesTheLastAtSign(t *testing.T) {
	for in, want := range map[string]string{
		// An unescaped "@" in the password: user info ends at the last one.
		"fetch http://u:p@ss@git.example.com/r.git: 401":   "fetch http://git.example.com/r.git: 401",
		`Get "http://tok@en:x@host/info/refs": refused`:    `Get "http://host/info/refs": refused`,
		"https://host/a@b and mail me@example.com":         "https://host/a@b and mail me@example.com",
		"nats://u:p@nats:4222?x=a@b, then me@example.com":  "nats://nats:4222?x=a@b, then me@example.com",
		"no URL here, just someone@example.com":            "no URL here, just someone@example.com",
		"two: http://a:b@h1/x http://c@d:e@h2:80 and text": "two: http://h1/x http://h2:80 and text",
	} {
		if got := StripUserInfo(in); got != want {
			t.Errorf("StripUserInfo(%q) = %q, want %q", in, got, want)
		}
	}
}
