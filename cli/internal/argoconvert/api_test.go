package argoconvert_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"text/template"
	"time"

	yaml "go.yaml.in/yaml/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"plumb.dev/cli/internal/argoconvert"
	"plumb.dev/pkg/testenv"
)

var shared = testenv.Lazy{Options: []testenv.Option{testenv.WithoutNATS()}}

func TestMain(m *testing.M) {
	code := m.Run()
	shared.Stop()
	os.Exit(code)
}

// inputs are the testdata inputs of one folder.
func inputs(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no inputs in testdata/%s: %v", dir, err)
	}
	return files
}

// create writes objs for real, in order; a Namespace that another
// input's output made already is fine, nothing else may fail.
func create(ctx context.Context, t *testing.T, c client.Client, from string, objs []*unstructured.Unstructured) {
	t.Helper()
	for _, o := range objs {
		err := c.Create(ctx, o.DeepCopy())
		if err != nil && !(apierrors.IsAlreadyExists(err) && o.GetKind() == "Namespace") {
			t.Errorf("%s: %s %s/%s refused by the API server: %v", from, o.GetKind(), o.GetNamespace(), o.GetName(), err)
		}
	}
}

// TestTheAPIServerAcceptsEveryConvertedObject converts every
// Application and AppProject of testdata and creates the objects on a
// real API server with Plumb's CRDs: every field must be one the
// schemas and their CEL rules accept.
func TestTheAPIServerAcceptsEveryConvertedObject(t *testing.T) {
	env := shared.Get(t)
	ctx := context.Background()
	created := 0
	for _, dir := range []string{"projects", "applications", "applicationsets"} {
		for _, in := range inputs(t, dir) {
			// A namespace per input: examples share names (guestbook).
			ns, err := env.Namespace(ctx, "convert")
			if err != nil {
				t.Fatal(err)
			}
			opts := argoconvert.DefaultOptions()
			opts.Namespace = ns
			data, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			rs, err := argoconvert.Convert(data, opts)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rs {
				create(ctx, t, env.Client, in, r.Objects)
				created += len(r.Objects)
			}
		}
	}
	if created < 40 {
		t.Fatalf("only %d objects created: are the inputs converted?", created)
	}
}

// sampleElements are elements as ObjectSet's generators give them (the
// contract's data names), one or two per generator of a set.
func sampleElements(t *testing.T, gen map[string]any) []map[string]any {
	t.Helper()
	if len(gen) != 1 {
		t.Fatalf("a generator must have exactly one kind, got %v", keys(gen))
	}
	for kind, v := range gen {
		spec, _ := v.(map[string]any)
		switch kind {
		case "list":
			var out []map[string]any
			elements, ok := spec["elements"].([]any)
			if !ok || len(elements) == 0 {
				t.Fatalf("list: elements missing: %v", spec)
			}
			for _, e := range elements {
				out = append(out, e.(map[string]any))
			}
			return out
		case "git":
			onlyKeys(t, "git", spec, "sourceRef", "directories", "files")
			ref := spec["sourceRef"].(map[string]any)
			if ref["kind"] != "GitRepository" || ref["name"] == "" {
				t.Errorf("git.sourceRef: %v", ref)
			}
			for _, d := range append(asList(spec["directories"]), asList(spec["files"])...) {
				onlyKeys(t, "git path", d.(map[string]any), "path", "exclude")
			}
			return []map[string]any{{"path": map[string]any{
				"path": "apps/web", "basename": "web", "basenameNormalized": "web",
				"segments": []any{"apps", "web"},
			}}}
		case "clusters":
			onlyKeys(t, "clusters", spec, "selector", "values")
			values, _ := spec["values"].(map[string]any)
			return []map[string]any{{
				"name": "prod-eu", "server": "https://prod-eu.example.com:6443",
				"metadata": map[string]any{"labels": map[string]any{"env": "prod", "environment-type": "shop"}, "annotations": map[string]any{}},
				"values":   values,
			}}
		case "pullRequests":
			onlyKeys(t, "pullRequests", spec, "github", "gitlab", "gitea", "filters", "requeueAfterSeconds")
			hosts := 0
			for _, h := range []string{"github", "gitlab", "gitea"} {
				if m, ok := spec[h].(map[string]any); ok {
					hosts++
					onlyKeys(t, "pullRequests."+h, m, "owner", "repo", "project", "api", "tokenRef", "labels", "pullRequestState")
				}
			}
			if hosts != 1 {
				t.Errorf("pullRequests: want one Git host, got %d", hosts)
			}
			if r, ok := spec["requeueAfterSeconds"]; ok {
				switch r.(type) {
				case int64, float64:
				default:
					t.Errorf("pullRequests.requeueAfterSeconds: want a number, got %v", r)
				}
			}
			for _, f := range asList(spec["filters"]) {
				onlyKeys(t, "pullRequests.filters", f.(map[string]any), "branchMatch", "targetBranchMatch")
			}
			return []map[string]any{{
				"number": "12", "title": "Preview", "branch": "feature-x", "branch_slug": "feature-x",
				"target_branch": "main", "target_branch_slug": "main",
				"head_sha": "0123456789abcdef0123456789abcdef01234567", "head_short_sha": "01234567", "head_short_sha_7": "0123456",
				"labels": []any{"preview"}, "author": "alice",
			}}
		case "matrix":
			onlyKeys(t, "matrix", spec, "generators")
			children := asList(spec["generators"])
			if len(children) != 2 {
				t.Fatalf("matrix: %d generators, the contract says two", len(children))
			}
			var out []map[string]any
			for _, a := range sampleElements(t, children[0].(map[string]any)) {
				for _, b := range sampleElements(t, children[1].(map[string]any)) {
					m := map[string]any{}
					for k, v := range a {
						m[k] = v
					}
					for k, v := range b {
						m[k] = v
					}
					out = append(out, m)
				}
			}
			return out
		case "merge":
			onlyKeys(t, "merge", spec, "generators", "mergeKeys")
			if len(asList(spec["mergeKeys"])) == 0 {
				t.Errorf("merge: mergeKeys missing")
			}
			children := asList(spec["generators"])
			if len(children) < 2 {
				t.Fatalf("merge: %d generators", len(children))
			}
			return sampleElements(t, children[0].(map[string]any))
		default:
			t.Fatalf("generator %q is not one of the contract's", kind)
		}
	}
	return nil
}

// TestObjectSetsFollowTheContract checks each ObjectSet against the
// shared contract (set.plumb.dev/v1, whose CRD is not on this API server
// yet): its fields and generators, and its template, rendered with Go's
// text/template over elements shaped as the contract says, must give
// Plumb objects the API server accepts.
func TestObjectSetsFollowTheContract(t *testing.T) {
	env := shared.Get(t)
	ctx := context.Background()
	ns, err := env.Namespace(ctx, "convert-set")
	if err != nil {
		t.Fatal(err)
	}
	sets := 0
	for _, in := range inputs(t, "applicationsets") {
		for _, r := range convertFile(t, in) {
			for _, o := range r.Objects {
				if o.GetKind() != argoconvert.ObjectSetKind {
					continue
				}
				sets++
				if o.GetAPIVersion() != "set.plumb.dev/v1" {
					t.Errorf("%s: apiVersion %s", in, o.GetAPIVersion())
				}
				spec := o.Object["spec"].(map[string]any)
				onlyKeys(t, in+": spec", spec, "interval", "suspend", "serviceAccountName", "generators", "template")
				if _, err := time.ParseDuration(spec["interval"].(string)); err != nil {
					t.Errorf("%s: spec.interval: %v", in, err)
				}
				gens := asList(spec["generators"])
				if len(gens) < 1 || len(gens) > 10 {
					t.Errorf("%s: %d generators, the contract takes 1 to 10", in, len(gens))
				}
				tpl, err := template.New(in).Option("missingkey=error").Parse(spec["template"].(string))
				if err != nil {
					t.Errorf("%s: the template does not parse: %v", in, err)
					continue
				}
				for gi, g := range gens {
					for i, e := range sampleElements(t, g.(map[string]any)) {
						var out bytes.Buffer
						if err := tpl.Execute(&out, e); err != nil {
							t.Errorf("%s: element %d: %v", in, i, err)
							continue
						}
						objs := decodeAll(t, in, out.Bytes())
						if len(objs) == 0 {
							t.Errorf("%s: element %d: the template gives no object", in, i)
						}
						for _, obj := range objs {
							if obj.GetNamespace() != "" {
								t.Errorf("%s: %s %s sets a namespace; an ObjectSet's objects are all in its own", in, obj.GetKind(), obj.GetName())
							}
							obj.SetNamespace(ns)
							// Elements of several inputs may give the same names.
							obj.SetName(fmt.Sprintf("%s-%d-%d-%s", strings.TrimSuffix(filepath.Base(in), ".yaml"), gi, i, obj.GetName()))
						}
						create(ctx, t, env.Client, in, objs)
					}
				}
			}
		}
	}
	// Of the documented examples, the merge of three generators and the
	// git files one (its destination comes from the files) are not
	// converted; the two of pull requests are.
	if sets < 6 {
		t.Fatalf("only %d ObjectSets converted", sets)
	}
}

func decodeAll(t *testing.T, from string, data []byte) []*unstructured.Unstructured {
	t.Helper()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var out []*unstructured.Unstructured
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return out
			}
			t.Fatalf("%s: the rendered template is not YAML: %v\n%s", from, err, data)
		}
		if m == nil {
			continue
		}
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(b); err != nil {
			t.Fatalf("%s: %v", from, err)
		}
		out = append(out, u)
	}
}

func onlyKeys(t *testing.T, what string, m map[string]any, allowed ...string) {
	t.Helper()
	ok := map[string]bool{}
	for _, a := range allowed {
		ok[a] = true
	}
	for k := range m {
		if !ok[k] {
			t.Errorf("%s: field %q is not in the contract", what, k)
		}
	}
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
