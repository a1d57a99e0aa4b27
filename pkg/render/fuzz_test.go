package render

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	kustomizev1 "plumb.dev/api/kustomize/v1"
)

// fuzzLimits keep each input cheap; fuzzAllocBound is what one build may
// allocate before it counts as a runaway (kustomize allocates about a
// kilobyte per node, so the node budget bounds it well below this).
var fuzzLimits = Limits{MaxInputBytes: 1 << 20, MaxNodes: 20_000, MaxDocuments: 500, MaxOutputBytes: 1 << 20}

const fuzzAllocBound = 512 << 20

// FuzzBuild renders a hostile source of three files (a kustomization, a
// resource or builtin config, and a patch) through a spec patch: the
// build must not panic, never reach the network, stay within its
// allocation bound, and either render or fail with one of Build's
// reasons.
func FuzzBuild(f *testing.F) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: leaked\n")
	}))
	defer srv.Close()
	url := srv.URL + "/x.yaml"
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  k: v\n"
	seeds := [][3]string{
		{kustomizationHeader + "resources:\n- cm.yaml\n", cm, ""},
		{kustomizationHeader + "generators:\n- cm.yaml\n", "apiVersion: builtin\nkind: ConfigMapGenerator\nmetadata:\n  name: g\nfiles:\n- leaked=" + url + "\n", ""},
		{kustomizationHeader + "generators:\n- |\n  apiVersion: builtin\n  kind: SecretGenerator\n  metadata:\n    name: g\n  envs:\n  - " + url + "\n", cm, ""},
		{kustomizationHeader + "resources:\n- cm.yaml\ntransformers:\n- patch.yaml\n", cm, "apiVersion: builtin\nkind: PatchTransformer\nmetadata:\n  name: p\npath: " + url + "\n"},
		{kustomizationHeader + "resources:\n- cm.yaml\npatches:\n- path: patch.yaml\n", cm, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  k: patched\n"},
		{kustomizationHeader + "resources:\n- cm.yaml\n- git@127.0.0.1/org/repo\n", cm, ""},
		{kustomizationHeader + "resources:\n- cm.yaml\n", aliasBomb(7), ""},
		{kustomizationHeader + "resources:\n- cm.yaml\nreplacements:\n- path: patch.yaml\n", cm, "- source: {kind: ConfigMap, name: cm, fieldPath: data.k}\n  targets:\n  - select: {kind: ConfigMap}\n    fieldPaths: [metadata.annotations.k]\n"},
		{"", cm + "---\n" + cm, ""},
	}
	for _, s := range seeds {
		f.Add(s[0], s[1], s[2], "")
	}
	f.Add(kustomizationHeader+"resources:\n- cm.yaml\n", cm, "", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  k: &a [*a]\n")

	f.Fuzz(func(t *testing.T, kustomization, resource, patch, specPatch string) {
		work := t.TempDir()
		files := map[string]string{"cm.yaml": resource, "patch.yaml": patch}
		if kustomization != "" {
			files["kustomization.yaml"] = kustomization
		}
		writeTree(t, SourceDir(work), files)
		spec := &kustomizev1.KustomizationSpec{}
		if specPatch != "" {
			spec.Patches = []kustomizev1.Patch{{Patch: specPatch}}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		before := allocated()
		res, err := Build(ctx, work, spec, Options{Limits: fuzzLimits})
		if grown := allocated() - before; grown > fuzzAllocBound {
			t.Fatalf("one build allocated %d MiB", grown>>20)
		}
		if n := hits.Load(); n > 0 {
			t.Fatalf("rendering reached the network (%d requests)", n)
		}
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("an error without a reason: %v", err)
			}
			return
		}
		if int64(len(res.Manifests)) > fuzzLimits.MaxOutputBytes {
			t.Fatalf("rendered %d bytes, over the limit", len(res.Manifests))
		}
		runtime.KeepAlive(res)
	})
}
