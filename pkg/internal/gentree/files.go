package gentree

import (
	"fmt"
	"os"
	"path/filepath"

	kustomizev1 "plumb.dev/api/kustomize/v1"
)

// FilesPath is the folder WriteFiles writes, relative to the tree's root.
const FilesPath = "files"

// WriteFiles writes n objects under dir/FilesPath, one to a file, in the
// mix of Write (ConfigMaps, Deployments and Services), without a
// kustomization file: issue 46's 1,000-file tree with Deployments, which
// pkg/render's fast path takes under a targetNamespace, images and patches
// since it takes referrers (docs/design/render-fast-path.md, "Referrers").
func WriteFiles(dir string, n int) error {
	folder := filepath.Join(dir, FilesPath)
	if err := os.MkdirAll(folder, 0o755); err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		var text string
		switch i % 10 {
		case 0, 1, 2, 3:
			text = fmt.Sprintf(configMap, i, i, i)
		case 4, 5, 6:
			text = fmt.Sprintf(deployment, i, i, i, i, i%7)
		default:
			text = fmt.Sprintf(service, i, i)
		}
		if err := os.WriteFile(filepath.Join(folder, fmt.Sprintf("object-%04d.yaml", i)), []byte(text), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// FilesSpec is the spec issue 46 renders the tree of WriteFiles under: a
// targetNamespace, an image and a JSON 6902 patch of every Service.
func FilesSpec() kustomizev1.KustomizationSpec {
	return kustomizev1.KustomizationSpec{
		Path:            FilesPath,
		TargetNamespace: "bench",
		Images:          []kustomizev1.Image{{Name: "registry.example/app", NewTag: "v2.0.0"}},
		Patches: []kustomizev1.Patch{{
			Patch:  "- op: add\n  path: /metadata/annotations/team\n  value: platform\n",
			Target: &kustomizev1.Selector{Kind: "Service"},
		}},
	}
}
