package helmrender

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	"plumb.dev/pkg/render"
	"plumb.dev/pkg/testtar"
)

// wantLimit fails unless err is a LimitExceeded error saying every one of
// want.
func wantLimit(t *testing.T, err error, want ...string) {
	t.Helper()
	if render.Reason(err) != meta.LimitExceededReason {
		t.Fatalf("reason %s, want LimitExceeded: %v", render.Reason(err), err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not say %q", err, w)
		}
	}
}

func TestLimits(t *testing.T) {
	archive := packageChart(t, "app", nil)
	ctx := context.Background()
	t.Run("archive", func(t *testing.T) {
		opts := baseOptions()
		opts.Limits.MaxArchiveBytes = int64(len(archive)) - 1
		_, err := Render(ctx, archive, opts)
		wantLimit(t, err, "--max-chart-size")
	})
	t.Run("decompressed", func(t *testing.T) {
		opts := baseOptions()
		opts.Limits.MaxDecompressedBytes = 1000
		_, err := Render(ctx, archive, opts)
		wantLimit(t, err, "--max-chart-extracted-size", "1000")
	})
	t.Run("values", func(t *testing.T) {
		opts := baseOptions()
		opts.Values = map[string]any{"config": map[string]any{"color": strings.Repeat("x", 200)}}
		opts.Limits.MaxValuesBytes = 100
		_, err := Render(ctx, archive, opts)
		wantLimit(t, err, "--max-values-size")
	})
	t.Run("templates output", func(t *testing.T) {
		opts := baseOptions()
		opts.Limits.MaxOutputBytes = 500
		_, err := Render(ctx, archive, opts)
		wantLimit(t, err, "--max-rendered-size", "templates rendered")
	})
	t.Run("manifests", func(t *testing.T) {
		// What the templates print passes; the canonical manifests, with
		// the crds/ CRDs, do not.
		res := mustRender(t, archive, baseOptions())
		opts := baseOptions()
		opts.Limits.MaxOutputBytes = int64(len(res.Manifests)) - 1
		_, err := Render(ctx, archive, opts)
		wantLimit(t, err, "--max-rendered-size", "rendered manifests")
	})
	t.Run("documents", func(t *testing.T) {
		opts := baseOptions()
		opts.Limits.MaxDocuments = 3
		_, err := Render(ctx, archive, opts)
		wantLimit(t, err, "--max-yaml-documents")
	})
}

// A gzip bomb is refused from its tar headers, before anything holds the
// decompressed files.
func TestDecompressionBomb(t *testing.T) {
	archive := testtar.TarGz(t, testtar.Files(map[string]string{
		"app/Chart.yaml":      "apiVersion: v2\nname: app\nversion: 1.0.0\n",
		"app/templates/x.bin": strings.Repeat("\x00", 64<<20),
	})...)
	if len(archive) > 1<<20 {
		t.Fatalf("the bomb is %d bytes compressed", len(archive))
	}
	opts := baseOptions()
	opts.Limits.MaxDecompressedBytes = 1 << 20
	allocated := allocatedBy(func() {
		_, err := Render(context.Background(), archive, opts)
		wantLimit(t, err, "--max-chart-extracted-size", "app/templates/x.bin")
	})
	if allocated > 8<<20 {
		t.Errorf("refusing the bomb allocated %d MiB", allocated>>20)
	}
}

// A template printing a YAML alias bomb, or more YAML nodes than the
// budget, is refused by the budget before anything expands it.
func TestYAMLBombs(t *testing.T) {
	many := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: many\ndata:\n{{- range $i := until 3000 }}\n  k{{ $i }}: v{{- end }}\n"
	for name, tc := range map[string]struct {
		template string
		maxNodes int64
		reason   string
		want     string
	}{
		"aliases":    {aliasBomb(9), 0, meta.LimitExceededReason, "--max-yaml-nodes"},
		"many nodes": {many, 2_000, meta.LimitExceededReason, "--max-yaml-nodes"},
	} {
		archive := packageChart(t, "app", map[string]string{"templates/bomb.yaml": tc.template})
		opts := baseOptions()
		opts.Limits.MaxNodes = tc.maxNodes
		allocated := allocatedBy(func() {
			_, err := Render(context.Background(), archive, opts)
			if render.Reason(err) != tc.reason || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "app/templates/bomb.yaml") {
				t.Errorf("%s: %v", name, err)
			}
		})
		if allocated > 64<<20 {
			t.Errorf("%s: refusing the bomb allocated %d MiB", name, allocated>>20)
		}
	}
}

// aliasBomb is a ConfigMap whose data nests levels of nine aliases each.
func aliasBomb(levels int) string {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bomb\ndata:\n  l0: &l0 [x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i <= levels; i++ {
		fmt.Fprintf(&b, "  l%d: &l%d [", i, i)
		for j := 0; j < 9; j++ {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "*l%d", i-1)
		}
		b.WriteString("]\n")
	}
	return b.String()
}

func allocatedBy(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// A template that takes longer than the render's deadline ends the render
// with LimitExceeded as soon as the deadline passes.
func TestDeadline(t *testing.T) {
	slow := `{{- range $i := until 3000 }}{{ range $j := until 3000 }}{{ end }}{{ end -}}
apiVersion: v1
kind: ConfigMap
metadata:
  name: slow
`
	archive := packageChart(t, "app", map[string]string{"templates/slow.yaml": slow})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := Render(ctx, archive, baseOptions())
	wantLimit(t, err, "--render-timeout")

	ctx, cancel = context.WithCancel(context.Background())
	cancel()
	_, err = Render(ctx, packageChart(t, "app", nil), baseOptions())
	wantLimit(t, err, "cancelled")
}

// Rendering reaches no network and no host file: lookup finds nothing,
// getHostByName resolves nothing, and a values.schema.json $ref to a URL or
// a host file is refused without being fetched.
func TestNoNetworkNoHost(t *testing.T) {
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		fmt.Fprint(w, `{"type": "object"}`)
	}))
	defer srv.Close()

	probe := `apiVersion: v1
kind: ConfigMap
metadata:
  name: probe
data:
  host: {{ getHostByName "localhost" | quote }}
  lookup: {{ lookup "v1" "Secret" "kube-system" "" | toJson | quote }}
  env: {{ (index (dict) "HOME") | default "none" | quote }}
`
	archive := packageChart(t, "app", map[string]string{"templates/probe.yaml": probe})
	objs := objects(t, mustRender(t, archive, baseOptions()).Manifests)
	cm := objs["ConfigMap/probe"]
	if got := field(t, cm, "data", "host"); got != "" {
		t.Errorf("getHostByName resolved %q", got)
	}
	if got := field(t, cm, "data", "lookup"); got != "{}" {
		t.Errorf("lookup found %q", got)
	}
	for _, env := range []string{`{{ env "HOME" }}`, `{{ expandenv "$HOME" }}`} {
		_, err := Render(context.Background(), packageChart(t, "app", map[string]string{"templates/env.yaml": env}), baseOptions())
		if render.Reason(err) != kustomizev1.BuildFailedReason || !strings.Contains(err.Error(), "not defined") {
			t.Errorf("%s: %v", env, err)
		}
	}

	for name, ref := range map[string]string{
		"http":          srv.URL + "/schema.json",
		"file":          "file:///etc/hostname",
		"relative file": "other.json",
	} {
		t.Run(name, func(t *testing.T) {
			schema := fmt.Sprintf(`{"type": "object", "properties": {"replicas": {"$ref": %q}}}`, ref)
			archive := packageChart(t, "app", map[string]string{"values.schema.json": schema})
			_, err := Render(context.Background(), archive, baseOptions())
			if render.Reason(err) != kustomizev1.BuildFailedReason || !strings.Contains(err.Error(), "rendering loads no schema") {
				t.Errorf("got %v", err)
			}
		})
	}
	t.Run("$schema", func(t *testing.T) {
		archive := packageChart(t, "app", map[string]string{"values.schema.json": fmt.Sprintf(`{"$schema": %q}`, srv.URL+"/meta.json")})
		_, err := Render(context.Background(), archive, baseOptions())
		if render.Reason(err) != kustomizev1.BuildFailedReason {
			t.Errorf("got %v", err)
		}
	})
	if n := requests.Load(); n != 0 {
		t.Errorf("the test server got %d requests", n)
	}
}

// A post-renderer's patch is charged to the node budget before kustomize
// expands it: the review's 363-byte patch of five levels of nine aliases
// (1.18 GiB once krusty expands it), and a small patch targeting many
// objects, are refused with little allocated.
func TestPostRendererBombs(t *testing.T) {
	many := "{{- range $i := until 300 }}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-{{ $i }}\n{{- end }}\n"
	archive := packageChart(t, "app", map[string]string{"templates/many.yaml": many})
	var big strings.Builder
	big.WriteString("- op: add\n  path: /data\n  value:\n")
	for i := 0; i < 1000; i++ {
		fmt.Fprintf(&big, "    k%d: v\n", i)
	}
	for name, tc := range map[string]kustomizev1.Patch{
		"aliases": {Patch: strings.Replace(aliasBomb(5), "name: bomb", "name: app", 1)},
		"targets": {Patch: big.String(), Target: &kustomizev1.Selector{Kind: "ConfigMap"}},
	} {
		opts := baseOptions()
		opts.PostRenderers = []helmv2.PostRenderer{{Kustomize: &helmv2.Kustomize{Patches: []kustomizev1.Patch{tc}}}}
		allocated := allocatedBy(func() {
			_, err := Render(context.Background(), archive, opts)
			wantLimit(t, err, "post-renderer 1: patch 1", "--max-yaml-nodes")
		})
		if allocated > 64<<20 {
			t.Errorf("%s: refusing the patch allocated %d MiB", name, allocated>>20)
		}
	}
}
