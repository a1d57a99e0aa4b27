package git

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSubmoduleURLsResolveLikeGitAndOnlyOverTheNetwork(t *testing.T) {
	parent := "https://git.example.com/team/app.git"
	tests := []struct{ raw, want, err string }{
		{raw: "../lib.git", want: "https://git.example.com/team/lib.git"},
		{raw: "./lib.git", want: "https://git.example.com/team/app.git/lib.git"},
		{raw: "../../other/lib.git", want: "https://git.example.com/other/lib.git"},
		{raw: "https://elsewhere.example.com/lib.git", want: "https://elsewhere.example.com/lib.git"},
		{raw: "ssh://git@git.example.com/team/lib.git", want: "ssh://git@git.example.com/team/lib.git"},
		{raw: "file:///var/run/secrets", err: `URL "file:///var/run/secrets" in .gitmodules is not an http://, https:// or ssh:// URL`},
		{raw: "git@git.example.com:team/lib.git", err: "is not an http://, https:// or ssh:// URL"},
		{raw: "/srv/git/lib.git", err: "is not an http://, https:// or ssh:// URL"},
		{raw: "ext::sh -c touch% /tmp/pwned", err: "is not an http://, https:// or ssh:// URL"},
	}
	for _, tt := range tests {
		got, err := submoduleURL(parent, tt.raw)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: got %q, %v; want error %q", tt.raw, got, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%s: got %q, %v; want %q", tt.raw, got, err, tt.want)
		}
	}
}

func TestSubmodulePathsStayInsideTheCheckout(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "vendor"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(os.TempDir(), filepath.Join(dir, "out")); err != nil {
		t.Fatal(err)
	}
	for path, ok := range map[string]bool{
		"vendor/lib": true, "lib": true,
		"../lib": false, "/etc/lib": false, "out/lib": false, ".git/modules": false, "vendor/../../x": false,
	} {
		if err := noLinkOnTheWay(dir, path); (err == nil) != ok {
			t.Errorf("%s: got %v, want allowed=%v", path, err, ok)
		}
	}
}
