package render

import (
	"net/url"
	"path"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// kustomize fetches a resource over HTTP when its path is an http(s) URL and
// runs `git clone` when it parses as a Git URL, and krusty offers no switch
// to turn either off. So before building, every kustomization reachable from
// the entry point is read and any path that kustomize would treat as remote
// is refused. The build itself then runs on an in-memory copy of the source.

// pathListKeys are kustomization fields that hold lists of paths.
var pathListKeys = []string{
	"resources", "bases", "components", "crds", "configurations",
	"generators", "transformers", "validators", "patchesStrategicMerge",
}

// checkNoRemote walks the kustomization graph from the kustomization in dir
// and refuses remote references.
func checkNoRemote(mem filesys.FileSystem, dir string) error {
	visited := map[string]bool{}
	var visit func(dir string) error
	visit = func(dir string) error {
		if visited[dir] {
			return nil
		}
		visited[dir] = true
		file := kustomizationFile(mem, dir)
		if file == "" {
			return nil
		}
		data, err := mem.ReadFile(file)
		if err != nil {
			return err
		}
		var k map[string]any
		if err := yaml.Unmarshal(data, &k); err != nil {
			// kustomize reports a malformed kustomization with more context.
			return nil
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(file, srcRoot), "/")
		for _, p := range referencedPaths(k) {
			if isRemote(p.value) {
				return buildErr("%s: remote %s %q refused: only paths inside the source are allowed", rel, p.field, p.value)
			}
		}
		for _, key := range []string{"resources", "bases", "components"} {
			for _, s := range stringList(k[key]) {
				sub := path.Join(dir, s)
				if mem.IsDir(sub) {
					if err := visit(sub); err != nil {
						return err
					}
				}
			}
		}
		return nil
	}
	return visit(dir)
}

type pathRef struct{ field, value string }

// referencedPaths lists every path-like value of a kustomization.
func referencedPaths(k map[string]any) []pathRef {
	var out []pathRef
	add := func(field string, v any) {
		if s, ok := v.(string); ok && s != "" && !strings.Contains(s, "\n") {
			out = append(out, pathRef{field, s})
		}
	}
	for _, key := range pathListKeys {
		for _, s := range stringList(k[key]) {
			add(strings.TrimSuffix(key, "s"), s)
		}
	}
	for _, key := range []string{"patches", "patchesJson6902", "replacements"} {
		for _, item := range mapList(k[key]) {
			add(key+" path", item["path"])
		}
	}
	if o, ok := k["openapi"].(map[string]any); ok {
		add("openapi path", o["path"])
	}
	for _, key := range []string{"configMapGenerator", "secretGenerator"} {
		for _, g := range mapList(k[key]) {
			for _, f := range stringList(g["files"]) {
				// files entries are "path" or "key=path".
				if _, p, ok := strings.Cut(f, "="); ok {
					f = p
				}
				add(key+" file", f)
			}
			for _, e := range stringList(g["envs"]) {
				add(key+" env", e)
			}
			add(key+" env", g["env"])
		}
	}
	return out
}

// isRemote reports whether kustomize would fetch p over the network: a URL
// with a scheme (http, https, ssh, git, file, …), go-getter's git:: form, a
// github.com path, or scp-like user@host:path.
func isRemote(p string) bool {
	lower := strings.ToLower(p)
	if strings.Contains(lower, "://") || strings.HasPrefix(lower, "git::") {
		return true
	}
	if strings.HasPrefix(lower, "github.com/") || strings.HasPrefix(lower, "github.com:") {
		return true
	}
	first, _, _ := strings.Cut(p, "/")
	if strings.Contains(first, "@") && strings.Contains(first, ":") {
		return true
	}
	if u, err := url.Parse(p); err == nil && u.Scheme != "" && u.Host != "" {
		return true
	}
	return false
}

func stringList(v any) []string {
	items, _ := v.([]any)
	out := make([]string, 0, len(items))
	for _, it := range items {
		if s, ok := it.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func mapList(v any) []map[string]any {
	items, _ := v.([]any)
	out := make([]map[string]any, 0, len(items))
	for _, it := range items {
		if m, ok := it.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}
