package diff

import (
	"encoding/json"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

func TestParsePointer(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Pointer
		err  string
	}{
		{in: "/spec/replicas", want: Pointer{"spec", "replicas"}},
		{in: "/", want: Pointer{""}},
		{in: "//", want: Pointer{"", ""}},
		{in: "/a~1b", want: Pointer{"a/b"}},
		{in: "/m~0n", want: Pointer{"m~n"}},
		{in: "/~01", want: Pointer{"~1"}},
		{in: "/~10", want: Pointer{"/0"}},
		{in: "/metadata/annotations/example.com~1owner", want: Pointer{"metadata", "annotations", "example.com/owner"}},
		{in: "/spec/containers/0/image", want: Pointer{"spec", "containers", "0", "image"}},
		{in: "/ü/ /%", want: Pointer{"ü", " ", "%"}},
		{in: "", err: "empty JSON pointer"},
		{in: "spec", err: "must start with '/'"},
		{in: "/a~", err: "'~' at the end"},
		{in: "/a~2", err: "invalid escape '~2'"},
		{in: "/a~~0", err: "invalid escape '~~'"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			g := NewWithT(t)
			p, err := ParsePointer(tc.in)
			if tc.err != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tc.err)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(p).To(Equal(tc.want))
			g.Expect(p.String()).To(Equal(tc.in))
		})
	}
}

func TestPointerRemove(t *testing.T) {
	const doc = `{"a":{"b":1,"c":{"d":2}},"l":[{"x":1},{"x":2},{"x":3}],"s":"str","e":{"only":{"one":true}},"k/ey":1,"z":{}}`
	for _, tc := range []struct {
		ptr     string
		removed bool
		want    string
	}{
		{"/a/b", true, `{"a":{"c":{"d":2}},"l":[{"x":1},{"x":2},{"x":3}],"s":"str","e":{"only":{"one":true}},"k/ey":1,"z":{}}`},
		{"/a/c/d", true, `{"a":{"b":1},"l":[{"x":1},{"x":2},{"x":3}],"s":"str","e":{"only":{"one":true}},"k/ey":1,"z":{}}`},
		{"/e/only/one", true, `{"a":{"b":1,"c":{"d":2}},"l":[{"x":1},{"x":2},{"x":3}],"s":"str","k/ey":1,"z":{}}`},
		{"/l/1", true, `{"a":{"b":1,"c":{"d":2}},"l":[{"x":1},{"x":3}],"s":"str","e":{"only":{"one":true}},"k/ey":1,"z":{}}`},
		{"/l/2/x", true, `{"a":{"b":1,"c":{"d":2}},"l":[{"x":1},{"x":2},{}],"s":"str","e":{"only":{"one":true}},"k/ey":1,"z":{}}`},
		{"/k~1ey", true, `{"a":{"b":1,"c":{"d":2}},"l":[{"x":1},{"x":2},{"x":3}],"s":"str","e":{"only":{"one":true}},"z":{}}`},
		{"/z/nothing", false, `{"a":{"b":1,"c":{"d":2}},"l":[{"x":1},{"x":2},{"x":3}],"s":"str","e":{"only":{"one":true}},"k/ey":1}`},
		{"/l/3", false, doc},
		{"/l/-", false, doc},
		{"/l/01", false, doc},
		{"/l/x", false, doc},
		{"/l/99999999999999999999999", false, doc},
		{"/s/x", false, doc},
		{"/a/b/c", false, doc},
		{"/missing/deep", false, doc},
	} {
		t.Run(tc.ptr, func(t *testing.T) {
			g := NewWithT(t)
			var m map[string]any
			g.Expect(json.Unmarshal([]byte(doc), &m)).To(Succeed())
			p, err := ParsePointer(tc.ptr)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(p.Remove(m)).To(Equal(tc.removed))
			got, _ := json.Marshal(m)
			g.Expect(got).To(MatchJSON(tc.want))
		})
	}
	t.Run("the list the last element left", func(t *testing.T) {
		g := NewWithT(t)
		m := map[string]any{"spec": map[string]any{"l": []any{"a"}}}
		g.Expect(Pointer{"spec", "l", "0"}.Remove(m)).To(BeTrue())
		g.Expect(m).To(BeEmpty())
	})
	t.Run("nil and empty", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(Pointer{"a"}.Remove(nil)).To(BeFalse())
		g.Expect(Pointer{}.Remove(map[string]any{"a": 1})).To(BeFalse())
	})
}

// FuzzParsePointer: the parser never panics, accepts exactly the strings
// RFC 6901 allows, and what it accepts renders back to the same text;
// removing with any accepted pointer never panics.
func FuzzParsePointer(f *testing.F) {
	for _, s := range []string{"", "/", "/spec/replicas", "/a~1b/~0", "/a~", "/a~2", "spec", "//", "/l/0/x", "/l/-", "/~01~10", "/\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePointer(s)
		valid := strings.HasPrefix(s, "/") && validEscapes(s)
		if (err == nil) != valid {
			t.Fatalf("ParsePointer(%q): err=%v, want valid=%v", s, err, valid)
		}
		if err != nil {
			return
		}
		if p.String() != s {
			t.Fatalf("ParsePointer(%q).String() = %q", s, p.String())
		}
		doc := map[string]any{"a": map[string]any{"b": []any{map[string]any{"c": 1}, "x"}}, "": map[string]any{"": []any{}}}
		p.Remove(doc)
	})
}

func validEscapes(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '~' {
			if i+1 >= len(s) || (s[i+1] != '0' && s[i+1] != '1') {
				return false
			}
			i++
		}
	}
	return true
}
