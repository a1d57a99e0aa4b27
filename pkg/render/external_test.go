package render

import (
	"context"
	"fmt"
	"strings"
	"testing"

	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
)

func configMaps(n int, prefix string) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s-%d\ndata:\n  k: v\n", prefix, i)
	}
	return b.String()
}

// ParseAll parses concurrently but charges the budgets in stream order:
// the refusal names the stream a sequential parse would have stopped at,
// every time.
func TestParseAllChargesInOrder(t *testing.T) {
	sources := make([]string, 40)
	data := make([][]byte, 40)
	for i := range data {
		sources[i] = fmt.Sprintf("file-%02d.yaml", i)
		data[i] = []byte(configMaps(5, sources[i]))
	}
	// 5 documents a stream: the 51st document is in stream 10.
	for run := 0; run < 20; run++ {
		_, err := NewBudget(Limits{MaxDocuments: 50}).ParseAll(sources, data)
		if Reason(err) != meta.LimitExceededReason || !strings.Contains(err.Error(), "file-10.yaml") {
			t.Fatalf("run %d: %v", run, err)
		}
	}
	// A broken stream after the limit is not the error; one before it is.
	data[30] = []byte("a: [")
	if _, err := NewBudget(Limits{MaxDocuments: 50}).ParseAll(sources, data); !strings.Contains(err.Error(), "file-10.yaml") {
		t.Errorf("got %v", err)
	}
	data[3] = []byte("a: [")
	if _, err := NewBudget(Limits{MaxDocuments: 50}).ParseAll(sources, data); Reason(err) != kustomizev1.BuildFailedReason || !strings.Contains(err.Error(), "file-03.yaml") {
		t.Errorf("got %v", err)
	}
	out, err := NewBudget(Limits{}).ParseAll(sources[:2], [][]byte{[]byte(configMaps(2, "a")), []byte("# only a comment\n---\n")})
	if err != nil || len(out) != 2 || len(out[0]) != 2 || len(out[1]) != 0 {
		t.Errorf("got %v, %v", out, err)
	}
	if _, err := NewBudget(Limits{}).Parse("list.yaml", []byte("- a\n- b\n")); Reason(err) != kustomizev1.ValidationFailedReason {
		t.Errorf("a list document: %v", err)
	}
}

func TestPostRenderAndAssemble(t *testing.T) {
	objs, err := NewBudget(Limits{}).Parse("in.yaml", []byte(configMaps(3, "cm")+`---
apiVersion: v1
kind: Pod
metadata:
  generateName: hook-
spec:
  containers:
  - name: c
    image: busybox
---
apiVersion: v1
kind: Pod
metadata:
  generateName: hook-
spec:
  containers:
  - name: c
    image: busybox:1
`))
	if err != nil {
		t.Fatal(err)
	}
	out, err := PostRender(context.Background(), objs,
		[]kustomizev1.Patch{{Patch: `[{"op": "add", "path": "/data/patched", "value": "yes"}]`, Target: &kustomizev1.Selector{Kind: "ConfigMap"}}},
		[]kustomizev1.Image{{Name: "busybox", NewTag: "1.36"}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Assemble(context.Background(), out, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	text := string(res.Manifests)
	if strings.Count(text, "patched: \"yes\"") != 3 || strings.Count(text, "image: busybox:1.36") != 2 ||
		strings.Count(text, "generateName: hook-") != 2 || strings.Contains(text, generatedMarker) {
		t.Errorf("got\n%s", text)
	}
	if len(res.Objects) != 5 {
		t.Errorf("%d objects", len(res.Objects))
	}

	// Errors: a post-render that fails is BuildFailed; Assemble reports
	// the first bad object in input order; a cancelled context stops both.
	if _, err := PostRender(context.Background(), objs, []kustomizev1.Patch{{Patch: "not: [a patch"}}, nil); Reason(err) != kustomizev1.BuildFailedReason {
		t.Errorf("broken patch: %v", err)
	}
	bad := append([]*kyaml.RNode{}, objs...)
	bad = append(bad, kyaml.MustParse("apiVersion: v1\nkind: ConfigMap\nmetadata: {labels: {a: b}}\n"), kyaml.MustParse("kind: Secret\nmetadata: {name: s}\n"))
	for run := 0; run < 10; run++ {
		if _, err := Assemble(context.Background(), bad, Limits{}); Reason(err) != kustomizev1.ValidationFailedReason || !strings.Contains(err.Error(), "has no metadata.name") {
			t.Fatalf("got %v", err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Assemble(ctx, objs, Limits{}); Reason(err) != meta.LimitExceededReason {
		t.Errorf("cancelled: %v", err)
	}
}
