package compose

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// tree writes files (slash path → content) below a new folder.
func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// contents reads every file below dir.
func contents(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func keys(m map[string]string) string {
	var k []string
	for name := range m {
		k = append(k, name)
	}
	sort.Strings(k)
	return strings.Join(k, " ")
}

var src = map[string]string{
	"deploy/app.yaml":          "kind: A",
	"deploy/README.md":         "docs",
	"deploy/sub/svc.yaml":      "kind: S",
	"deploy/testdata/bad.yaml": "kind: T",
	"values.yaml":              "a: 1\nm:\n  x: 1\n  y: 1\n",
	"prod.yaml":                "b: 2\nm:\n  y: 2\n",
}

// cp's meanings: a folder copied as a folder, "**" its contents, a glob
// its matches, a file to a folder or to a new name; excludes by name and
// by path below the prefix.
func TestApplyCopiesAsCpDoes(t *testing.T) {
	root := tree(t, src)
	for _, tc := range []struct {
		name string
		c    Copy
		want string
	}{
		{"folder", Copy{From: "deploy/", To: "out/"}, "out/deploy/README.md out/deploy/app.yaml out/deploy/sub/svc.yaml out/deploy/testdata/bad.yaml"},
		{"contents", Copy{From: "deploy/**", To: ""}, "README.md app.yaml sub/svc.yaml testdata/bad.yaml"},
		{"glob", Copy{From: "deploy/*.yaml", To: "x/"}, "x/app.yaml"},
		{"exclude", Copy{From: "deploy/**", To: "", Exclude: []string{"*.md", "testdata/**"}}, "app.yaml sub/svc.yaml"},
		{"exclude any depth", Copy{From: "deploy/**", To: "", Exclude: []string{"**/testdata/**"}}, "README.md app.yaml sub/svc.yaml"},
		{"file to folder", Copy{From: "values.yaml", To: "chart/"}, "chart/values.yaml"},
		{"file renamed", Copy{From: "values.yaml", To: "chart/v.yaml"}, "chart/v.yaml"},
		{"root", Copy{From: "", To: "all/", Exclude: []string{"*.yaml", "*.md"}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := t.TempDir()
			err := NewOutput(out, Limits{}).Apply("src", root, tc.c)
			if tc.want == "" {
				if err == nil || !strings.Contains(err.Error(), "no file matches") {
					t.Fatalf("Apply = %v, want no file matches", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := keys(contents(t, out)); got != tc.want {
				t.Errorf("files %q, want %q", got, tc.want)
			}
		})
	}
}

// Merge merges maps deeply, the later file winning (the key "y" kept a
// string, as YAML 1.2 reads it); Overwrite replaces.
func TestMergeIsHelmsValuesMerge(t *testing.T) {
	root := tree(t, src)
	out := t.TempDir()
	o := NewOutput(out, Limits{})
	if err := o.Apply("src", root, Copy{From: "values.yaml", To: "values.yaml"}); err != nil {
		t.Fatal(err)
	}
	if err := o.Apply("src", root, Copy{From: "prod.yaml", To: "values.yaml", Merge: true}); err != nil {
		t.Fatal(err)
	}
	if got, want := contents(t, out)["values.yaml"], "a: 1\nb: 2\nm:\n  x: 1\n  \"y\": 2\n"; got != want {
		t.Errorf("merged values:\n%s\nwant:\n%s", got, want)
	}
	if err := o.Apply("src", root, Copy{From: "deploy/README.md", To: "values.yaml", Merge: true}); err == nil {
		t.Error("merging a file that is not a YAML map succeeded")
	}
	if err := o.Apply("src", root, Copy{From: "prod.yaml", To: "values.yaml"}); err != nil {
		t.Fatal(err)
	}
	if got := contents(t, out)["values.yaml"]; got != src["prod.yaml"] {
		t.Errorf("overwritten values = %q", got)
	}
}

// Paths that leave the source or the artifact, and symlinks pointing out
// of the source, are refused; a link inside it is followed.
func TestHostilePathsAreRefused(t *testing.T) {
	root := tree(t, src)
	secret := tree(t, map[string]string{"secret": "s3cret"})
	if err := os.Symlink(filepath.Join(secret, "secret"), filepath.Join(root, "deploy", "escape.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../values.yaml", filepath.Join(root, "deploy", "inside.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(root, "linkdir")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []Copy{
		{From: "../../etc", To: ""},
		{From: "deploy/../../x", To: ""},
		{From: "/etc/passwd", To: ""},
		{From: "values.yaml", To: "../x.yaml"},
		{From: "deploy/escape.yaml", To: "x.yaml"},
		{From: "deploy/*.yaml", To: ""},
		{From: "linkdir/secret", To: "x"},
	} {
		out := t.TempDir()
		err := NewOutput(out, Limits{}).Apply("src", root, c)
		if !errors.Is(err, ErrUnsafePath) {
			t.Errorf("Apply(%+v) = %v, want ErrUnsafePath", c, err)
		}
		for _, v := range contents(t, out) {
			if v == "s3cret" {
				t.Errorf("Apply(%+v) copied the file outside the source", c)
			}
		}
	}
	out := t.TempDir()
	if err := NewOutput(out, Limits{}).Apply("src", root, Copy{From: "deploy/inside.yaml", To: "v.yaml"}); err != nil {
		t.Fatal(err)
	}
	if got := contents(t, out)["v.yaml"]; got != src["values.yaml"] {
		t.Errorf("link inside the source copied %q", got)
	}
}

// The output's files and bytes are bounded.
func TestLimits(t *testing.T) {
	root := tree(t, src)
	if err := NewOutput(t.TempDir(), Limits{MaxFiles: 2}).Apply("src", root, Copy{From: "deploy/**"}); !errors.Is(err, ErrTooLarge) {
		t.Errorf("4 files with MaxFiles 2: %v", err)
	}
	if err := NewOutput(t.TempDir(), Limits{MaxBytes: 10}).Apply("src", root, Copy{From: "deploy/**"}); !errors.Is(err, ErrTooLarge) {
		t.Errorf("over MaxBytes: %v", err)
	}
	if err := NewOutput(t.TempDir(), Limits{MaxFiles: 4, MaxBytes: 100}).Apply("src", root, Copy{From: "deploy/**"}); err != nil {
		t.Errorf("within the limits: %v", err)
	}
	// A Merge parses both files whole: each is bounded on its own.
	o := NewOutput(t.TempDir(), Limits{MaxMergeBytes: 20})
	if err := o.Apply("src", root, Copy{From: "values.yaml", To: "values.yaml"}); err != nil {
		t.Fatal(err)
	}
	if err := o.Apply("src", root, Copy{From: "prod.yaml", To: "values.yaml", Merge: true}); !errors.Is(err, ErrTooLarge) {
		t.Errorf("merging into a %d-byte file with MaxMergeBytes 20: %v", len(src["values.yaml"]), err)
	}
}
