package render

import (
	"context"
	"testing"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/internal/gentree"
)

// BenchmarkBuild renders a generated base of 200 objects through an overlay
// (namespace, prefix, labels, image, patches). `make bench-render` compares
// 1,000 objects with the kustomize CLI.
func BenchmarkBuild(b *testing.B) {
	dir := b.TempDir()
	if err := gentree.Write(SourceDir(dir), 200); err != nil {
		b.Fatal(err)
	}
	spec := &kustomizev1.KustomizationSpec{Path: gentree.OverlayPath}
	b.ReportAllocs()
	for b.Loop() {
		res, err := Build(context.Background(), dir, spec, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Objects) != 200 {
			b.Fatalf("rendered %d objects, want 200", len(res.Objects))
		}
	}
}

// BenchmarkSubstitute measures the substitution parser on a 1,000-line
// document with a variable on every line.
func BenchmarkSubstitute(b *testing.B) {
	text := ""
	for i := 0; i < 1000; i++ {
		text += "  key: value-${name}-${missing:=default} $${escaped}\n"
	}
	lookup := func(string) (string, bool) { return "v", true }
	b.ReportAllocs()
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		if _, err := Substitute(text, lookup, false); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBuildPlainFolder renders 1,000 ConfigMaps in a folder, in one
// file and in 1,000 files of one, without a kustomization file and with
// one that lists the files, for a spec that sets nothing, one with a
// targetNamespace and one with an image and a JSON 6902 patch of every
// ConfigMap (issue 46's shapes, bench-fleet's images-patch), through kustomize (the fast path
// off) and through the fast path, in the same run: `go test ./pkg/render
// -run XXX -bench PlainFolder`.
func BenchmarkBuildPlainFolder(b *testing.B) {
	const objects = 1000
	for _, layout := range []struct {
		name          string
		perFile       int
		kustomization bool
	}{{"one-file", objects, false}, {"files-of-one", 1, false}, {"one-file-listed", objects, true}, {"files-of-one-listed", 1, true}} {
		dir := b.TempDir()
		if err := gentree.WritePlain(SourceDir(dir), objects, layout.perFile, layout.kustomization); err != nil {
			b.Fatal(err)
		}
		for _, shape := range []struct {
			name string
			spec kustomizev1.KustomizationSpec
		}{{"bare", kustomizev1.KustomizationSpec{Path: gentree.PlainPath}},
			{"targetNamespace", kustomizev1.KustomizationSpec{Path: gentree.PlainPath, TargetNamespace: "bench"}},
			{"images-patch", kustomizev1.KustomizationSpec{Path: gentree.PlainPath, Images: []kustomizev1.Image{{Name: "nginx", NewTag: "1.27.0"}},
				Patches: []kustomizev1.Patch{{Patch: `[{"op": "add", "path": "/metadata/labels/patched", "value": "true"}]`, Target: &kustomizev1.Selector{Kind: "ConfigMap"}}}}}} {
			benchPlainPaths(b, layout.name+"/"+shape.name, dir, &shape.spec, objects)
		}
	}
}

// BenchmarkBuildWorkloads renders issue 46's tree with Deployments
// (gentree.WriteFiles: 1,000 ConfigMaps, Deployments and Services, one per
// file, no kustomization file) under a targetNamespace; under
// gentree.FilesSpec (a targetNamespace, an image and a JSON 6902 patch of
// every Service); and under an image and a strategic-merge patch of every
// Deployment's container (merged by the schema's key, the container's
// name) — through kustomize (the fast path off: what every build with a
// Deployment did before the fast path took referrers) and through the fast
// path, in the same run: `go test ./pkg/render -run XXX -bench Workloads`.
func BenchmarkBuildWorkloads(b *testing.B) {
	const objects = 1000
	dir := b.TempDir()
	if err := gentree.WriteFiles(SourceDir(dir), objects); err != nil {
		b.Fatal(err)
	}
	for _, shape := range []struct {
		name string
		spec kustomizev1.KustomizationSpec
	}{{"targetNamespace", kustomizev1.KustomizationSpec{Path: gentree.FilesPath, TargetNamespace: "bench"}},
		{"images-patch", gentree.FilesSpec()},
		{"images-smp", kustomizev1.KustomizationSpec{Path: gentree.FilesPath, Images: []kustomizev1.Image{{Name: "registry.example/app", NewTag: "v2.0.0"}},
			Patches: []kustomizev1.Patch{{
				Patch:  "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: any\nspec:\n  template:\n    spec:\n      containers:\n      - name: app\n        resources:\n          limits: {memory: 64Mi}\n",
				Target: &kustomizev1.Selector{Kind: "Deployment"}}}}}} {
		benchPlainPaths(b, shape.name, dir, &shape.spec, objects)
	}
}

// benchPlainPaths benchmarks one build of dir through kustomize and
// through the fast path, which each must (and must not) take.
func benchPlainPaths(b *testing.B, name, dir string, spec *kustomizev1.KustomizationSpec, objects int) {
	for _, path := range []struct {
		name string
		off  bool
	}{{"kustomize", true}, {"fast", false}} {
		b.Run(name+"/"+path.name, func(b *testing.B) {
			disableFastPath.Store(path.off)
			defer disableFastPath.Store(false)
			before := fastPathUses.Load()
			b.ReportAllocs()
			for b.Loop() {
				res, err := Build(context.Background(), dir, spec, Options{})
				if err != nil {
					b.Fatal(err)
				}
				if len(res.Objects) != objects {
					b.Fatalf("rendered %d objects, want %d", len(res.Objects), objects)
				}
			}
			if took := fastPathUses.Load() > before; took == path.off {
				b.Fatalf("fast path taken: %v, want %v", took, !path.off)
			}
		})
	}
}
