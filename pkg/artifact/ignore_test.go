package artifact

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

func TestIgnorerMatch(t *testing.T) {
	tests := []struct {
		name   string
		spec   *string
		nested map[string]string // folder -> .sourceignore content
		path   string
		isDir  bool
		want   bool
	}{
		{name: "git folder", path: ".git", isDir: true, want: true},
		{name: "submodule git file", path: "vendor/lib/.git", want: true},
		{name: "default png", path: "img/logo.png", want: true},
		{name: "default png replaced by spec", spec: ptr("*.log"), path: "img/logo.png", want: false},
		{name: "spec glob", spec: ptr("*.log"), path: "a/b/c.log", want: true},
		{name: "anchored spec", spec: ptr("/c.log"), path: "a/c.log", want: false},
		{name: "double star", spec: ptr("**/tmp/**"), path: "a/tmp/x", want: true},
		{name: "dir only", spec: ptr("build/"), path: "build", isDir: false, want: false},
		{name: "dir only on dir", spec: ptr("build/"), path: "build", isDir: true, want: true},
		{name: "comment is no rule", spec: ptr("# a.yaml"), path: "# a.yaml", want: false},
		{name: "escaped hash", spec: ptr(`\#a.yaml`), path: "#a.yaml", want: true},
		{name: "crlf", spec: ptr("a.yaml\r\nb.yaml\r\n"), path: "b.yaml", want: true},
		{name: "nested scoped", nested: map[string]string{"docs": "*.md"}, path: "readme.md", want: false},
		{name: "nested applies below", nested: map[string]string{"docs": "*.md"}, path: "docs/x/readme.md", want: true},
		{name: "spec overrides nested", spec: ptr("!docs/keep.md"), nested: map[string]string{"docs": "*.md"}, path: "docs/keep.md", want: false},
		{name: "negation", spec: ptr("*.yaml\n!keep.yaml"), path: "keep.yaml", want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ig := NewIgnorer(tt.spec)
			for folder, rules := range tt.nested {
				g.Expect(ig.AddRules(strings.NewReader(rules), strings.Split(folder, "/"))).To(Succeed())
			}
			g.Expect(ig.MatchString(tt.path, tt.isDir)).To(Equal(tt.want))
		})
	}
}

// FuzzParseIgnore feeds arbitrary rule files (spec.ignore and .sourceignore
// are both user input) to the parser and matcher: they must never panic,
// comment and blank lines must never become rules, and .git stays ignored.
func FuzzParseIgnore(f *testing.F) {
	for _, seed := range []struct{ rules, path string }{
		{"*.yaml\n!keep.yaml\n", "keep.yaml"},
		{"/anchored\n", "a/anchored"},
		{"**/x/**\n", "a/x/b"},
		{"dir/\n", "dir"},
		{"# comment\n\n   \n", "# comment"},
		{`\#hash` + "\n", "#hash"},
		{"!\n/\n!/\n", "a"},
		{"[a-\n", "a"},
		{"a/**/b\r\n", "a/b"},
		{"\x00\xff\n", "\x00"},
		{strings.Repeat("*", 200), "aaaa"},
	} {
		f.Add(seed.rules, seed.path, false)
	}
	f.Fuzz(func(t *testing.T, rules, path string, isDir bool) {
		ps, err := ParseIgnore(strings.NewReader(rules), nil)
		if err != nil {
			t.Fatalf("ParseIgnore failed on content: %v", err)
		}
		lines := 0
		for _, l := range strings.Split(rules, "\n") {
			l = strings.TrimSuffix(l, "\r")
			if strings.TrimSpace(l) != "" && !strings.HasPrefix(l, "#") && len(l) < maxIgnoreLine {
				lines++
			}
		}
		if len(ps) > lines {
			t.Fatalf("%d rules from %d rule lines", len(ps), lines)
		}
		ig := NewIgnorer(&rules)
		_ = ig.MatchString(path, isDir)
		_ = ig.Match(strings.Split(path, "/"), isDir)
		if !ig.Match([]string{".git"}, true) {
			t.Fatal(".git is not ignored")
		}
	})
}
