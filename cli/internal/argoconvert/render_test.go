package argoconvert_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	sigsyaml "sigs.k8s.io/yaml"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/render"
)

// argoEdits are what Argo CD's `kustomize edit` writes into an
// application's kustomization.yaml for its kustomize options, before it
// builds: written here by hand from Argo CD's documented behaviour, not
// by the converter, so the comparison has two independent sides.
var argoEdits = map[string]map[string]any{
	"kustomize-images.yaml": {
		"nameSuffix": "-v6",
		"images":     []any{map[string]any{"name": "gcr.io/google-samples/gb-frontend", "newTag": "v6"}},
		"replicas":   []any{map[string]any{"name": "kustomize-guestbook-ui", "count": 3}},
		"labels":     []any{map[string]any{"pairs": map[string]any{"release": "v6"}}},
		"namespace":  "guestbook-v6",
		"patches": []any{map[string]any{
			"target": map[string]any{"kind": "Service"},
			"patch":  "- op: replace\n  path: /spec/type\n  value: NodePort",
		}},
	},
}

// clusterScoped are the kinds of the examples Argo CD gives no namespace.
var clusterScoped = map[string]bool{"Namespace": true, "ClusterRole": true, "ClusterRoleBinding": true, "CustomResourceDefinition": true}

// argoRender renders an Application's folder as Argo CD does: kustomize
// build (after its edits) when the folder has a kustomization, else every
// YAML file of the folder itself; then the destination namespace on
// every namespaced object that has none.
func argoRender(t *testing.T, app, path, namespace string) map[string]string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "repo")
	if err := os.CopyFS(root, os.DirFS(filepath.Join("testdata", "repo"))); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, path)
	var docs [][]byte
	kfile := filepath.Join(dir, "kustomization.yaml")
	if _, err := os.Stat(kfile); err == nil {
		if edits := argoEdits[app]; edits != nil {
			data, err := os.ReadFile(kfile)
			if err != nil {
				t.Fatal(err)
			}
			var k map[string]any
			if err := sigsyaml.Unmarshal(data, &k); err != nil {
				t.Fatal(err)
			}
			for f, v := range edits {
				k[f] = v
			}
			if data, err = sigsyaml.Marshal(k); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(kfile, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
		if err != nil {
			t.Fatalf("%s: kustomize build: %v", app, err)
		}
		for _, r := range m.Resources() {
			y, err := r.AsYAML()
			if err != nil {
				t.Fatal(err)
			}
			docs = append(docs, y)
		}
	} else {
		if argoEdits[app] != nil {
			t.Fatalf("%s: kustomize options on a folder without a kustomization", app)
		}
		files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			docs = append(docs, data)
		}
	}
	out := map[string]string{}
	for _, d := range docs {
		for _, obj := range splitObjects(t, d) {
			md := obj["metadata"].(map[string]any)
			if md["namespace"] == nil && namespace != "" && !clusterScoped[obj["kind"].(string)] {
				md["namespace"] = namespace
			}
			addObject(t, out, obj)
		}
	}
	return out
}

// plumbRender renders the converted Kustomization with render-controller's
// build.
func plumbRender(t *testing.T, spec *kustomizev1.KustomizationSpec) map[string]string {
	t.Helper()
	work := t.TempDir()
	if err := os.CopyFS(render.SourceDir(work), os.DirFS(filepath.Join("testdata", "repo"))); err != nil {
		t.Fatal(err)
	}
	res, err := render.Build(context.Background(), work, spec, render.Options{})
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	out := map[string]string{}
	for _, obj := range splitObjects(t, res.Manifests) {
		addObject(t, out, obj)
	}
	return out
}

func splitObjects(t *testing.T, data []byte) []map[string]any {
	t.Helper()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var out []map[string]any
	for {
		var v map[string]any
		if err := dec.Decode(&v); err != nil {
			if errors.Is(err, io.EOF) {
				return out
			}
			t.Fatal(err)
		}
		if v != nil {
			out = append(out, v)
		}
	}
}

// addObject keys obj by kind, namespace and name, as canonical JSON.
func addObject(t *testing.T, into map[string]string, obj map[string]any) {
	t.Helper()
	md := obj["metadata"].(map[string]any)
	ns, _ := md["namespace"].(string)
	name, _ := md["name"].(string)
	if name == "" {
		// A hook named at each sync (generateName).
		name, _ = md["generateName"].(string)
	}
	key := obj["kind"].(string) + "/" + ns + "/" + name
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	into[key] = string(b)
}

// TestConvertedKustomizationsRenderWhatArgoCDWould builds each converted
// example Application both ways — as Argo CD builds the Application, and
// with Plumb's render of the converted Kustomization — and wants the same
// objects, field for field.
func TestConvertedKustomizationsRenderWhatArgoCDWould(t *testing.T) {
	for _, app := range []string{"guestbook.yaml", "kustomize-guestbook.yaml", "sync-waves.yaml", "pre-post-sync.yaml", "helm-hooks.yaml", "kustomize-images.yaml"} {
		t.Run(app, func(t *testing.T) {
			rs := convertFile(t, filepath.Join("testdata", "applications", app))
			var spec *kustomizev1.KustomizationSpec
			for _, r := range rs {
				for _, o := range r.Objects {
					if o.GetKind() != kustomizev1.KustomizationKind {
						continue
					}
					var ks kustomizev1.Kustomization
					if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &ks); err != nil {
						t.Fatal(err)
					}
					spec = &ks.Spec
				}
			}
			if spec == nil {
				t.Fatalf("%s: no Kustomization converted", app)
			}
			// The Application's destination namespace, as Argo CD applies it.
			var dest struct {
				Spec struct {
					Destination struct{ Namespace string }
					Source      struct{ Path string }
				}
			}
			data, err := os.ReadFile(filepath.Join("testdata", "applications", app))
			if err != nil {
				t.Fatal(err)
			}
			if err := sigsyaml.Unmarshal(data, &dest); err != nil {
				t.Fatal(err)
			}
			want := argoRender(t, app, dest.Spec.Source.Path, dest.Spec.Destination.Namespace)
			got := plumbRender(t, spec)
			if len(want) == 0 {
				t.Fatalf("%s: Argo CD's side rendered nothing", app)
			}
			var diffs []string
			for _, k := range sortedKeys(want, got) {
				if want[k] != got[k] {
					diffs = append(diffs, k+":\n  Argo CD: "+want[k]+"\n  Plumb:   "+got[k])
				}
			}
			if len(diffs) > 0 {
				t.Errorf("%s renders differently:\n%s", app, strings.Join(diffs, "\n"))
			}
		})
	}
}

func sortedKeys(ms ...map[string]string) []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range ms {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	sort.Strings(out)
	return out
}
