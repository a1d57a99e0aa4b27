package object

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// referenceDecode is how DecodeManifests read an artifact before it parsed
// YAML straight into maps: apimachinery's YAMLOrJSONDecoder, which turns each
// YAML document into JSON text and decodes that. It is the oracle the
// differential tests hold DecodeManifests to.
func referenceDecode(data []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), jsonPeek)
	var objs []*unstructured.Unstructured
	for i := 1; ; i++ {
		var m map[string]any
		err := dec.Decode(&m)
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("rendered manifests, document %d: %w", i, err)
		}
		if len(m) == 0 {
			continue
		}
		obj := &unstructured.Unstructured{Object: m}
		if obj.GetAPIVersion() == "" || obj.GetKind() == "" || (obj.GetName() == "" && obj.GetGenerateName() == "") {
			return nil, fmt.Errorf("rendered manifests, document %d: apiVersion, kind and metadata.name are required", i)
		}
		objs = append(objs, obj)
	}
}

// sameDecode fails t when DecodeManifests and the reference disagree on
// data: both must fail, or both return the same objects, of the same Go
// types down to every number. Where a YAML mapping has two keys that are the
// same once made strings (1 and "1"), the reference keeps one of them at
// random; it is asked a few times before the results are called different.
func sameDecode(t *testing.T, name string, data []byte) {
	t.Helper()
	got, err := DecodeManifests(data)
	for try := 0; ; try++ {
		want, wantErr := referenceDecode(data)
		if (err == nil) != (wantErr == nil) {
			t.Fatalf("%s: DecodeManifests error %v, the reference's %v\n%q", name, err, wantErr, data)
		}
		if err != nil || reflect.DeepEqual(objects(got), objects(want)) {
			return
		}
		if try == 20 {
			t.Fatalf("%s: DecodeManifests and the reference decode differently\n got: %#v\nwant: %#v\n%q", name, objects(got), objects(want), data)
		}
	}
}

func objects(objs []*unstructured.Unstructured) []map[string]any {
	out := make([]map[string]any, len(objs))
	for i, o := range objs {
		out[i] = o.Object
	}
	return out
}

// TestDecodeManifestsMatchesReference runs every YAML and JSON file under
// the repository's testdata directories (kustomize trees, charts' values,
// rendered manifests, CRDs) and a few cases of the YAML/JSON stream rules
// through both decoders.
func TestDecodeManifestsMatchesReference(t *testing.T) {
	root := filepath.Join("..", "..")
	files := 0
	err := filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() && (e.Name() == "node_modules" || strings.HasPrefix(e.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		ext := filepath.Ext(path)
		if e.IsDir() || !strings.Contains(filepath.ToSlash(path), "/testdata/") || (ext != ".yaml" && ext != ".yml" && ext != ".json") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		sameDecode(t, path, data)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("found %d testdata manifests under %s, expected the repository's (more than 100)", files, root)
	}
	t.Logf("%d testdata files decoded alike", files)

	for name, data := range map[string]string{
		"numbers":             "apiVersion: v1\nkind: X\nmetadata:\n  name: a\nspec:\n  i: 3\n  big: 9007199254740993\n  neg: -0.0\n  f: 1.5e300\n  oct: 0755\n  hex: 0x1F\n  u: 18446744073709551615\n",
		"yaml 1.1 booleans":   "apiVersion: v1\nkind: X\nmetadata:\n  name: a\ndata:\n  a: yes\n  b: off\n  c: \"on\"\n  ts: 2024-01-02T03:04:05Z\n",
		"keys":                "apiVersion: v1\nkind: X\nmetadata:\n  name: a\nspec:\n  1: a\n  1.5: b\n  true: c\n  0.1: d\n",
		"binary":              "apiVersion: v1\nkind: X\nmetadata:\n  name: a\ndata:\n  b: !!binary /w==\n",
		"binary keys":         "apiVersion: v1\nkind: X\nmetadata:\n  name: a\ndata:\n  ? !!binary /w==\n  : a\n  ? !!binary /g==\n  : b\n",
		"infinity":            "apiVersion: v1\nkind: X\nmetadata:\n  name: a\nspec:\n  f: .inf\n",
		"null key":            "apiVersion: v1\nkind: X\nmetadata:\n  name: a\nspec:\n  ~: a\n",
		"anchors and merge":   "apiVersion: v1\nkind: X\nmetadata:\n  name: a\n  labels: &l {a: b}\nspec:\n  <<: *l\n  c: *l\n",
		"crlf":                "apiVersion: v1\r\nkind: X\r\nmetadata:\r\n  name: a\r\ndata:\r\n  s: |\r\n    x\r\n---\r\napiVersion: v1\r\nkind: X\r\nmetadata: {name: b}\r",
		"no final newline":    "apiVersion: v1\nkind: X\nmetadata:\n  name: a\ndata:\n  s: |\n    x",
		"bad separator":       "apiVersion: v1\nkind: X\nmetadata:\n  name: a\n--- x\n",
		"separator comment":   "--- # one\napiVersion: v1\nkind: X\nmetadata:\n  name: a\n---\n# nothing\n---\n",
		"list document":       "- a\n",
		"json stream":         `{"apiVersion":"v1","kind":"X","metadata":{"name":"a"},"n":1} {"apiVersion":"v1","kind":"X","metadata":{"name":"b"}}`,
		"json then yaml":      "{\"apiVersion\":\"v1\",\"kind\":\"X\",\"metadata\":{\"name\":\"a\"}}\n---\napiVersion: v1\nkind: X\nmetadata:\n  name: b\n",
		"flow mapping":        "{apiVersion: v1, kind: X, metadata: {name: a}}\n",
		"json then too short": "{\"apiVersion\":\"v1\",\"kind\":\"X\",\"metadata\":{\"name\":\"a\"}}\nx:",
	} {
		sameDecode(t, name, []byte(data))
	}
}

// FuzzDecodeManifestsMatchesReference: for any bytes, DecodeManifests and
// the reference both fail or return the same objects.
func FuzzDecodeManifestsMatchesReference(f *testing.F) {
	f.Add([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  n: 1\n  f: 1.5\n  b: yes\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: b\nspec:\n  replicas: 3\n"))
	f.Add([]byte("---\n---\n"))
	f.Add([]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"},"data":{"n":1e3}}`))
	f.Add([]byte("{\"apiVersion\":\"v1\",\"kind\":\"X\",\"metadata\":{\"name\":\"a\"}}\n---\napiVersion: v1\nkind: X\nmetadata:\n  name: b\n"))
	f.Add([]byte("apiVersion: v1\r\nkind: X\r\nmetadata: {name: a}\r\ns: !!binary /w==\r\n1: 2\r\n"))
	f.Add([]byte("apiVersion: v1\nkind: X\nmetadata:\n  name: a\n  labels: &l {a: b}\nspec:\n  <<: *l\n  c: [*l, 0x1F, .inf, ~]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		sameDecode(t, "fuzz", data)
	})
}

// BenchmarkDecodeManifests decodes a rendered artifact of 1,000 objects
// (ConfigMaps, Services and Deployments in the shape bench-sync applies)
// with DecodeManifests and with the reference, the JSON text round trip it
// replaced.
func BenchmarkDecodeManifests(b *testing.B) {
	data := benchManifests(1000)
	for name, decode := range map[string]func([]byte) ([]*unstructured.Unstructured, error){
		"direct":    DecodeManifests,
		"reference": referenceDecode,
	} {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				objs, err := decode(data)
				if err != nil || len(objs) != 1000 {
					b.Fatalf("%d objects, %v", len(objs), err)
				}
			}
		})
	}
}

func benchManifests(n int) []byte {
	var b bytes.Buffer
	for i := range n {
		name := fmt.Sprintf("app-%04d", i)
		b.WriteString("---\n")
		switch i % 3 {
		case 0:
			fmt.Fprintf(&b, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  labels:\n    app.kubernetes.io/component: %[1]s\n    app.kubernetes.io/name: bench\n  name: %[1]s\n  namespace: apps\ndata:\n  key: %[1]s\n  settings.yaml: |\n    name: %[1]s\n    replicas: 1\n    features: [alpha, beta, gamma]\n", name)
		case 1:
			fmt.Fprintf(&b, "apiVersion: v1\nkind: Service\nmetadata:\n  labels:\n    app.kubernetes.io/name: bench\n  name: %[1]s\n  namespace: apps\nspec:\n  clusterIP: None\n  ports:\n  - name: http\n    port: 80\n    targetPort: 8080\n  selector:\n    app: %[1]s\n", name)
		default:
			fmt.Fprintf(&b, "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  labels:\n    app.kubernetes.io/name: bench\n  name: %[1]s\n  namespace: apps\nspec:\n  replicas: 1\n  selector:\n    matchLabels:\n      app: %[1]s\n  template:\n    metadata:\n      labels:\n        app: %[1]s\n    spec:\n      containers:\n      - image: registry.example/app:1.0\n        name: app\n        ports:\n        - containerPort: 8080\n        resources:\n          requests:\n            cpu: 100m\n            memory: 64Mi\n", name)
		}
	}
	return b.Bytes()
}
