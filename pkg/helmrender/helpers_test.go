package helmrender

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
)

// packageChart copies the chart folder testdata/charts/<name> into a
// temporary folder, writes files over it (a path mapped to "" removes the
// file), and packages it with the SDK, as `helm package` does. It returns
// the archive.
func packageChart(t testing.TB, name string, files map[string]string) []byte {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	copyDir(t, filepath.Join("testdata", "charts", name), dir)
	for p, content := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if content == "" {
			if err := os.RemoveAll(full); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return saveChart(t, dir)
}

// saveChart packages the chart folder dir with the SDK.
func saveChart(t testing.TB, dir string) []byte {
	t.Helper()
	ch, err := loader.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out, err := chartutil.Save(ch, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func copyDir(t testing.TB, src, dst string) {
	t.Helper()
	err := filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if info.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// mustRender renders and fails the test on an error.
func mustRender(t testing.TB, archive []byte, opts Options) *Result {
	t.Helper()
	res, err := Render(context.Background(), archive, opts)
	if err != nil {
		t.Fatalf("Render: %v", err)
	}
	return res
}

// objects parses a render's manifests, keyed "Kind/name" (or
// "Kind/generateName" for an object without a name).
func objects(t testing.TB, manifests []byte) map[string]*kyaml.RNode {
	t.Helper()
	out := map[string]*kyaml.RNode{}
	for _, doc := range strings.Split(string(manifests), "\n---\n") {
		n, err := kyaml.Parse(doc)
		if err != nil {
			t.Fatalf("parsing %q: %v", doc, err)
		}
		name := n.GetName()
		if name == "" {
			gen, _ := n.Pipe(kyaml.Lookup("metadata", "generateName"))
			name = kyaml.GetValue(gen)
		}
		key := n.GetKind() + "/" + name
		if _, dup := out[key]; dup {
			t.Fatalf("two objects %s", key)
		}
		out[key] = n
	}
	return out
}

// field reads a string field of n at path, "" when absent.
func field(t testing.TB, n *kyaml.RNode, path ...string) string {
	t.Helper()
	v, err := n.Pipe(kyaml.Lookup(path...))
	if err != nil {
		t.Fatal(err)
	}
	if v == nil {
		return ""
	}
	return kyaml.GetValue(v)
}

func baseOptions() Options {
	return Options{ReleaseName: "web", Namespace: "apps", IsInstall: true}
}
