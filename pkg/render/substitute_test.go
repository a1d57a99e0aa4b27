package render

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

func lookupIn(m map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := m[name]
		return v, ok
	}
}

func TestSubstitute(t *testing.T) {
	vars := map[string]string{"a": "A", "b_2": "B", "empty": "", "_x": "X"}
	tests := []struct {
		in, want string
		strict   bool
		used     []string
		err      string
	}{
		{in: "no vars", want: "no vars"},
		{in: "${a}", want: "A", used: []string{"a"}},
		{in: "x-${a}-${b_2}-${_x}", want: "x-A-B-X", used: []string{"_x", "a", "b_2"}},
		{in: "${missing}", want: ""},
		{in: "${missing}", strict: true, err: "undefined variable(s) without a default: missing"},
		{in: "${m2} ${m1} ${m2}", strict: true, err: "without a default: m1, m2"},
		{in: "${missing:=def}", want: "def", strict: true},
		{in: "${missing:-def}", want: "def"},
		{in: "${empty:=def}", want: "def"},
		{in: "${empty}", want: "", used: []string{"empty"}},
		{in: "${a:=def}", want: "A", used: []string{"a"}},
		{in: "${missing:=}", want: "", strict: true},
		{in: "${missing:=a b:c/d}", want: "a b:c/d"},
		{in: "$${a}", want: "${a}"},
		{in: "$$${a}", want: "$${a}"},
		{in: "$a $ $$ a$", want: "$a $ $$ a$"},
		{in: "cost: $5", want: "cost: $5"},
		{in: "line1\nline2 ${a", err: "line 2: unclosed variable reference"},
		{in: "${a\n}", err: "line 1: unclosed variable reference"},
		{in: "${}", err: `invalid variable reference "${}"`},
		{in: "${1abc}", err: `invalid variable reference "${1abc}"`},
		{in: "${a b}", err: `expected ${name}, ${name:=default} or ${name:-default}`},
		{in: "${array[@]}", err: `invalid variable reference "${array[@]}"`},
		{in: "${a:=${b}}", err: "defaults cannot hold variable references"},
		{in: "${a:?err}", err: "expected ${name}"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			g := NewWithT(t)
			out, err := Substitute(tt.in, lookupIn(vars), tt.strict)
			if tt.err != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.err)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(out.Text).To(Equal(tt.want))
			g.Expect(out.Used).To(Equal(tt.used))
		})
	}
}

func TestValidName(t *testing.T) {
	for name, ok := range map[string]bool{"a": true, "_": true, "A_1": true, "1a": false, "a-b": false, "a.b": false, "": false} {
		if ValidName(name) != ok {
			t.Errorf("ValidName(%q) = %v, want %v", name, !ok, ok)
		}
	}
}

// FuzzSubstitute checks the parser on arbitrary text: it never panics, text
// without "$" comes back as is, escaping then substituting is the identity,
// and values (which may hold "${") are inserted verbatim, never re-parsed.
func FuzzSubstitute(f *testing.F) {
	for _, seed := range []string{
		"", "plain", "${a}", "${a:=d}", "${a:-d}", "$${a}", "$$${a}", "${", "${a", "${}",
		"${1}", "${a b}", "$", "$$", "a: ${b}\nc: ${d:=e}\n", "${a:=${b}}", "\x00${\xff}",
	} {
		f.Add(seed, "v${x}")
	}
	f.Fuzz(func(t *testing.T, text, value string) {
		lookup := func(string) (string, bool) { return value, true }
		out, err := Substitute(text, lookup, true)
		if !strings.Contains(text, "$") && (err != nil || out.Text != text) {
			t.Fatalf("text without $ changed: %q -> %q, %v", text, out.Text, err)
		}
		back, err := Substitute(Escape(text), lookup, true)
		if err != nil {
			t.Fatalf("escaped text %q does not parse: %v", Escape(text), err)
		}
		if back.Text != text {
			t.Fatalf("Substitute(Escape(%q)) = %q", text, back.Text)
		}
		if len(back.Used) != 0 {
			t.Fatalf("escaped text used variables %v", back.Used)
		}
		one, err := Substitute("${v}", lookup, true)
		if err != nil || one.Text != value {
			t.Fatalf("a value was not inserted verbatim: %q -> %q, %v", value, one.Text, err)
		}
	})
}
