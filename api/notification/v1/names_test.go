package v1

import (
	"path"
	"strings"
	"testing"
)

func TestMatchesName(t *testing.T) {
	for _, tc := range []struct {
		pattern, s string
		want       bool
	}{
		{"web", "web", true},
		{"web", "web2", false},
		{"*", "", true},
		{"*", "anything", true},
		{"web-*", "web-prod", true},
		{"web-*", "api-prod", false},
		{"*-prod", "web-prod", true},
		{"*-prod", "web-prod-2", false},
		{"a*b*c", "abc", true},
		{"a*b*c", "aXbYc", true},
		{"a*b*c", "acb", false},
		{"a*a", "a", false},
		{"a*a", "aa", true},
		{"**", "x", true},
	} {
		if got := (CrossNamespaceObjectReference{Name: tc.pattern}).MatchesName(tc.s); got != tc.want {
			t.Errorf("MatchesName(%q, %q) = %v, want %v", tc.pattern, tc.s, got, tc.want)
		}
	}
}

// FuzzMatchesName compares with path.Match on inputs without its other
// metacharacters.
func FuzzMatchesName(f *testing.F) {
	f.Add("a*b", "axxb")
	f.Add("*x*", "yxy")
	f.Fuzz(func(t *testing.T, pattern, s string) {
		if strings.ContainsAny(pattern+s, `?[]\/`) {
			return
		}
		want, err := path.Match(pattern, s)
		if err != nil {
			return
		}
		if got := (CrossNamespaceObjectReference{Name: pattern}).MatchesName(s); got != want {
			t.Fatalf("MatchesName(%q, %q) = %v, path.Match says %v", pattern, s, got, want)
		}
	})
}
