package imageupdate

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-billy/v5/memfs"
)

var testRefs = map[string]ImageRef{
	"flux-system:podinfo": {Name: "ghcr.io/stefanprodan/podinfo", Tag: "5.0.3", Digest: "sha256:1111111111111111111111111111111111111111111111111111111111111111"},
	"flux-system:sidecar": {Name: "ghcr.io/example/sidecar", Tag: "2.0"},
}

// loadTree copies a testdata folder into an in-memory tree.
func loadTree(t *testing.T, dir string) billy.Filesystem {
	t.Helper()
	tree := memfs.New()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		return writeNew(tree, filepath.ToSlash(rel), b)
	})
	if err != nil {
		t.Fatal(err)
	}
	return tree
}

func writeNew(tree billy.Filesystem, p string, b []byte) error {
	f, err := tree.Create(p)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		return err
	}
	return f.Close()
}

// treeFiles reads every regular file of a tree.
func treeFiles(t *testing.T, tree billy.Filesystem, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	entries, err := tree.ReadDir(cmpOr(dir, "."))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		p := filepath.ToSlash(filepath.Join(dir, e.Name()))
		switch {
		case e.IsDir():
			for k, v := range treeFiles(t, tree, p) {
				out[k] = v
			}
		case e.Mode().IsRegular():
			b, err := readFile(tree, p, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			out[p] = string(b)
		}
	}
	return out
}

func TestSettersChangeOnlyTheMarkedValuesUnderThePath(t *testing.T) {
	tree := loadTree(t, "testdata/setters/in")
	res, err := Setters(context.Background(), tree, "apps", testRefs, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	got := treeFiles(t, tree, "")
	want := treeFiles(t, loadTree(t, "testdata/setters/want"), "")
	if len(got) != len(want) {
		t.Fatalf("files: got %d, want %d", len(got), len(want))
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("%s differs from testdata/setters/want/%s:\n%s", name, name, got[name])
		}
	}

	if files := res.Files(); !reflect.DeepEqual(files, []string{"podinfo/deploy.yaml", "podinfo/kustomization.yml"}) {
		t.Errorf("changed files: %v", files)
	}
	deploy := ObjectIdentifier{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "apps", Name: "podinfo"}
	cm := ObjectIdentifier{APIVersion: "v1", Kind: "ConfigMap", Name: "versions"}
	wantChanges := ObjectChanges{
		deploy: {
			{OldValue: "ghcr.io/stefanprodan/podinfo:5.0.0", NewValue: testRefs["flux-system:podinfo"].String(), Setter: "flux-system:podinfo"},
			{OldValue: "ghcr.io/example/sidecar:1.0", NewValue: "ghcr.io/example/sidecar:2.0", Setter: "flux-system:sidecar"},
		},
		cm: {
			{OldValue: "5.0.0", NewValue: "5.0.3", Setter: "flux-system:podinfo:tag"},
			{OldValue: "sha256:" + strings.Repeat("0", 64), NewValue: "sha256:" + strings.Repeat("1", 64), Setter: "flux-system:podinfo:digest"},
		},
	}
	if !reflect.DeepEqual(res.FileChanges["podinfo/deploy.yaml"], wantChanges) {
		t.Errorf("changes of deploy.yaml: %+v", res.FileChanges["podinfo/deploy.yaml"])
	}
	kust := res.FileChanges["podinfo/kustomization.yml"][ObjectIdentifier{}]
	if !reflect.DeepEqual(kust, []Change{{OldValue: "5.0.0", NewValue: "5.0.3", Setter: "flux-system:podinfo:tag"}}) {
		t.Errorf("changes of kustomization.yml: %+v", kust)
	}
	if n := len(res.Changes()); n != 5 {
		t.Errorf("Changes(): %d, want 5", n)
	}
	if n := len(res.Objects()); n != 3 {
		t.Errorf("Objects(): %d, want 3", n)
	}
}

func TestSettersAreIdempotent(t *testing.T) {
	tree := loadTree(t, "testdata/setters/want")
	res, err := Setters(context.Background(), tree, "", testRefs, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	// other/deploy.yaml is under the root this time.
	if files := res.Files(); !reflect.DeepEqual(files, []string{"other/deploy.yaml"}) {
		t.Errorf("changed files: %v", files)
	}
	res, err = Setters(context.Background(), tree, "", testRefs, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Empty() {
		t.Errorf("a second run changed %v", res.Files())
	}
}

func TestAPlainValueIsQuotedWhenItWouldChangeType(t *testing.T) {
	tree := memfs.New()
	in := "apiVersion: v1\nkind: ConfigMap\ndata:\n  a: v1 # {\"$imagepolicy\": \"ns:app:tag\"}\n  b: 1.9 # {\"$imagepolicy\": \"ns:app:tag\"}\n"
	if err := writeNew(tree, "cm.yaml", []byte(in)); err != nil {
		t.Fatal(err)
	}
	if _, err := Setters(context.Background(), tree, "", map[string]ImageRef{"ns:app": {Name: "app", Tag: "1.10"}}, Limits{}); err != nil {
		t.Fatal(err)
	}
	want := "apiVersion: v1\nkind: ConfigMap\ndata:\n  a: \"1.10\" # {\"$imagepolicy\": \"ns:app:tag\"}\n  b: 1.10 # {\"$imagepolicy\": \"ns:app:tag\"}\n"
	if got := treeFiles(t, tree, "")["cm.yaml"]; got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestAnUpdatePathOutsideTheTreeIsRefused(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "x.yaml"), []byte("a: b # {\"$imagepolicy\": \"ns:app\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "apps"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "apps", "inner")); err != nil {
		t.Fatal(err)
	}
	tree := osTree(dir)
	refs := map[string]ImageRef{"ns:app": {Name: "app", Tag: "2"}}
	for _, p := range []string{"link", "link/", "../x", "apps/../../x", "/etc"} {
		if _, err := Setters(context.Background(), tree, p, refs, Limits{}); !errors.Is(err, ErrPath) {
			t.Errorf("update.path %q: got %v, want ErrPath", p, err)
		}
	}
	// A link met during the walk is not followed.
	res, err := Setters(context.Background(), tree, "apps", refs, Limits{})
	if err != nil || !res.Empty() {
		t.Errorf("walk through a link: %v, %v", res.Files(), err)
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "x.yaml")); string(b) != "a: b # {\"$imagepolicy\": \"ns:app\"}\n" {
		t.Errorf("the file outside changed: %s", b)
	}
}

func TestBoundsFailWithAClearError(t *testing.T) {
	mk := func() billy.Filesystem {
		tree := memfs.New()
		for _, n := range []string{"a.yaml", "b.yaml", "c.yaml"} {
			if err := writeNew(tree, "d/"+n, []byte("apiVersion: v1\nkind: ConfigMap\ndata:\n  x: app:1 # {\"$imagepolicy\": \"ns:app\"}\n")); err != nil {
				t.Fatal(err)
			}
		}
		return tree
	}
	refs := map[string]ImageRef{"ns:app": {Name: "app", Tag: "2"}}
	for name, tc := range map[string]struct {
		limits Limits
		want   string
	}{
		"files":     {Limits{MaxFiles: 3}, "more than 3 files and folders"},
		"file size": {Limits{MaxFileBytes: 20}, "d/a.yaml is 77 bytes, more than 20"},
		"total":     {Limits{MaxTotalBytes: 100}, "hold more than 100 bytes"},
		"changes":   {Limits{MaxChanges: 2}, "more than 2 marked fields"},
	} {
		tree := mk()
		_, err := Setters(context.Background(), tree, "", refs, tc.limits)
		if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want ErrLimit with %q", name, err, tc.want)
		}
		// Nothing was written.
		if got := treeFiles(t, tree, "")["d/a.yaml"]; !strings.Contains(got, "app:1 ") {
			t.Errorf("%s: a failed run wrote d/a.yaml:\n%s", name, got)
		}
	}
}
