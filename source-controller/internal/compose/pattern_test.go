package compose

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// Folders matching the pattern are found with their captures, in
// lexical order; files, shallower and deeper folders are not matches.
func TestPatternMatchesFoldersAndCapturesSegments(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"apps/web/envs/prod/x", "apps/web/envs/dev", "apps/Api/envs/prod", "apps/lonely", "other/web/envs/prod"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "apps", "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := ParsePattern("apps/{app}/envs/{env}")
	if err != nil {
		t.Fatal(err)
	}
	got, err := p.Match(root, 10)
	if err != nil {
		t.Fatal(err)
	}
	want := []Match{
		{Path: "apps/Api/envs/prod", Captures: map[string]string{"app": "Api", "env": "prod"}},
		{Path: "apps/web/envs/dev", Captures: map[string]string{"app": "web", "env": "dev"}},
		{Path: "apps/web/envs/prod", Captures: map[string]string{"app": "web", "env": "prod"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	if _, err := p.Match(root, 2); !errors.Is(err, ErrTooManyMatches) {
		t.Fatalf("over the bound: got %v", err)
	}
	if !reflect.DeepEqual(p.Names(), []string{"app", "env"}) {
		t.Fatalf("names %v", p.Names())
	}
}

func TestParsePatternRefusesMalformedPatterns(t *testing.T) {
	for pattern, want := range map[string]string{
		"":                 "a relative folder path",
		"/apps/{app}":      "a relative folder path",
		"apps/../{app}":    "unsafe path",
		"apps/{app":        "a { without its }",
		"apps/app}":        "a } without its {",
		"apps/{}":          "a name is",
		"apps/{a-b}":       "a name is",
		"apps/{_app}":      "not a label key",
		"{app}/x/{app}":    "appears twice",
		"apps/{app}-{env}": "",
	} {
		_, err := ParsePattern(pattern)
		if want == "" {
			if err != nil {
				t.Errorf("%q: %v", pattern, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: want an error with %q, got %v", pattern, want, err)
		}
	}
}

func TestExpandReplacesOnlyKnownCaptures(t *testing.T) {
	vars := map[string]string{"app": "web", "env": "prod"}
	if got, err := Expand("{app}-{env}/x", vars); err != nil || got != "web-prod/x" {
		t.Fatalf("got %q, %v", got, err)
	}
	for s, want := range map[string]string{"{other}": "not a capture", "{app": "without its }", "app}": "without its {"} {
		if _, err := Expand(s, vars); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: want %q, got %v", s, want, err)
		}
	}
}
