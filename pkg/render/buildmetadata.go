package render

import (
	"path/filepath"
	"strings"

	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
	"sigs.k8s.io/yaml"
)

// The annotations kustomize's buildMetadata writes (spec.buildMetadata).
const (
	originAnnotation          = "config.kubernetes.io/origin"
	transformationsAnnotation = "alpha.config.kubernetes.io/transformations"
)

// relocateBuildMetadata rewrites the file paths in the buildMetadata
// annotations of node so that they are relative to spec.path, as Flux's
// are: kustomize writes them relative to the folder of the kustomization
// it built, which for Plumb is the overlay beside the source folder
// ("../source/apps/deploy.yaml"), a detail of how Build lays out its work
// folder that says nothing to a reader of the object. userRel is spec.path
// relative to the work folder. The overlay's own kustomization.yaml, named
// as "kustomization.yaml", stands for spec.path's, where Flux writes the
// spec's fields, and is left as it is.
func relocateBuildMetadata(node *kyaml.RNode, userRel string) error {
	ann := node.GetAnnotations()
	changed := false
	for _, key := range []string{originAnnotation, transformationsAnnotation} {
		v, ok := ann[key]
		if !ok {
			continue
		}
		var doc any
		if err := yaml.Unmarshal([]byte(v), &doc); err != nil {
			return err
		}
		var origins []any
		switch d := doc.(type) {
		case map[string]any:
			origins = []any{d}
		case []any:
			origins = d
		}
		for _, o := range origins {
			m, ok := o.(map[string]any)
			if !ok || m["repo"] != nil {
				continue // a remote origin is not a file of the source
			}
			for _, field := range []string{"path", "configuredIn"} {
				if p, ok := m[field].(string); ok {
					m[field] = relativeToSpecPath(p, userRel)
				}
			}
		}
		out, err := yaml.Marshal(doc)
		if err != nil {
			return err
		}
		ann[key] = string(out)
		changed = true
	}
	if !changed {
		return nil
	}
	return node.SetAnnotations(ann)
}

// relativeToSpecPath turns p, relative to the overlay folder, into a path
// relative to userRel (both inside the work folder).
func relativeToSpecPath(p, userRel string) string {
	inWork, ok := strings.CutPrefix(p, "../")
	if !ok {
		return p
	}
	rel, err := filepath.Rel(filepath.FromSlash(userRel), filepath.FromSlash(inWork))
	if err != nil {
		return p
	}
	return filepath.ToSlash(rel)
}
