package render

import (
	"context"
	"os"
	"path"
	"path/filepath"
	"testing"

	"sigs.k8s.io/kustomize/api/krusty"
	kustypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/internal/gentree"
)

// BenchmarkBuildKustomizeFiles renders 1,000 objects in 1,000 files under
// gentree.FilesSpec with Build, the fast path off so that kustomize builds
// it (the fast path takes this shape since it takes Deployments;
// BenchmarkBuildWorkloads measures that), and with what `kustomize build`
// does on the same tree (krusty on the disk with the overlay Build would
// write, then the resources printed as YAML), in the same run: issue 46
// asks Build, where kustomize must run, to cost at most 1.1× the latter.
//
//	go test ./pkg/render -run XXX -bench KustomizeFiles -benchtime 5x
func BenchmarkBuildKustomizeFiles(b *testing.B) {
	const objects = 1000
	dir := b.TempDir()
	if err := gentree.WriteFiles(SourceDir(dir), objects); err != nil {
		b.Fatal(err)
	}
	spec := gentree.FilesSpec()
	b.Run("render", func(b *testing.B) {
		disableFastPath.Store(true)
		defer disableFastPath.Store(false)
		b.ReportAllocs()
		for b.Loop() {
			res, err := Build(context.Background(), dir, &spec, Options{})
			if err != nil {
				b.Fatal(err)
			}
			if len(res.Objects) != objects {
				b.Fatalf("rendered %d objects, want %d", len(res.Objects), objects)
			}
		}
	})
	b.Run("kustomize-build", func(b *testing.B) {
		overlay := writeOverlayForCLI(b, dir, &spec)
		b.ReportAllocs()
		for b.Loop() {
			kopts := krusty.MakeDefaultOptions()
			kopts.PluginConfig = kustypes.DisabledPluginConfig()
			m, err := krusty.MakeKustomizer(kopts).Run(filesys.MakeFsOnDisk(), overlay)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := m.AsYaml(); err != nil {
				b.Fatal(err)
			}
			if m.Size() != objects {
				b.Fatalf("built %d objects, want %d", m.Size(), objects)
			}
		}
	})
}

// writeOverlayForCLI writes, in a copy of dir's tree, the kustomizations
// Build keeps in memory for spec (the overlay, and spec.path's generated
// one), so that the kustomize CLI builds what Build builds; it returns the
// overlay's folder.
func writeOverlayForCLI(tb testing.TB, dir string, spec *kustomizev1.KustomizationSpec) string {
	tb.Helper()
	work := tb.TempDir()
	if err := os.CopyFS(work, os.DirFS(dir)); err != nil {
		tb.Fatal(err)
	}
	root, err := filepath.EvalSymlinks(work)
	if err != nil {
		tb.Fatal(err)
	}
	fsys, err := newSandboxFS(context.Background(), root, Limits{}.withDefaults(), nil)
	if err != nil {
		tb.Fatal(err)
	}
	userDir := filepath.Join(root, sourceFolder, filepath.FromSlash(spec.Path))
	if kustomizationFile(fsys, userDir) == "" {
		data, _, _, _, err := generateKustomization(fsys, userDir, false)
		if err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(userDir, "kustomization.yaml"), data, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	overlayData, err := overlayFile(path.Join(sourceFolder, spec.Path), spec, func(string) bool { return true })
	if err != nil {
		tb.Fatal(err)
	}
	overlay := filepath.Join(root, overlayFolder)
	if err := os.MkdirAll(overlay, 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), overlayData, 0o644); err != nil {
		tb.Fatal(err)
	}
	return overlay
}
