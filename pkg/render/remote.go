package render

import (
	"regexp"
	"strings"
)

// kustomize fetches a file over HTTP when a path it loads is an http(s) URL
// and runs `git clone` when a folder path parses as a Git URL, and krusty
// has no switch to turn either off. So every file kustomize reads passes
// through sandboxFS, which checks it before kustomize sees it: a
// kustomization (at any depth, and the generator, transformer and
// validator configs written inline in it) and every builtin generator or
// transformer config (read as a file of its own, or as a resource of a
// folder listed under generators, transformers or validators) is refused
// when a field that kustomize loads from holds a remote reference. Nothing
// is fetched before the refusal, because the refusal is the read.

// kustomizationPathLists are the kustomization fields that list paths or
// URLs kustomize loads.
var kustomizationPathLists = []string{
	"resources", "bases", "components", "crds", "configurations",
	"generators", "transformers", "validators", "patchesStrategicMerge",
}

// pluginLists are the kustomization fields whose entries are either paths
// or generator/transformer configs written inline.
var pluginLists = []string{"generators", "transformers", "validators"}

// checkKustomization refuses a kustomization (already parsed) that names a
// remote path in any field kustomize loads from. (Plugin configs written
// inline are parsed and checked by sandboxFS.inspectInline.)
func checkKustomization(file string, k map[string]any) error {
	for _, key := range kustomizationPathLists {
		for _, s := range stringList(k[key]) {
			if strings.Contains(s, "\n") {
				continue // an inline patch or config, checked below
			}
			if isRemote(s) {
				return remoteErr(file, key, s)
			}
		}
	}
	for _, key := range []string{"patches", "patchesJson6902", "replacements"} {
		for _, item := range mapList(k[key]) {
			if err := checkPath(file, key+".path", item["path"]); err != nil {
				return err
			}
		}
	}
	if o, ok := k["openapi"].(map[string]any); ok {
		if err := checkPath(file, "openapi.path", o["path"]); err != nil {
			return err
		}
	}
	for _, key := range []string{"configMapGenerator", "secretGenerator"} {
		for _, g := range mapList(k[key]) {
			if err := checkGeneratorSources(file, key, g); err != nil {
				return err
			}
		}
	}
	for _, key := range []string{"helmCharts", "helmChartInflationGenerator"} {
		for _, h := range mapList(k[key]) {
			if err := checkHelmChart(file, key, h); err != nil {
				return err
			}
		}
	}
	if g, ok := k["helmGlobals"].(map[string]any); ok {
		if err := checkPath(file, "helmGlobals.chartHome", g["chartHome"]); err != nil {
			return err
		}
	}
	return nil
}

// checkPluginConfig refuses a builtin generator or transformer config that
// loads from a remote path. Only the builtins load files; with plugins
// disabled, kustomize refuses any other kind itself.
func checkPluginConfig(file string, m map[string]any) error {
	kind, _ := m["kind"].(string)
	switch kind {
	case "ConfigMapGenerator", "SecretGenerator":
		return checkGeneratorSources(file, kind, m)
	case "PatchTransformer", "PatchJson6902Transformer":
		return checkPath(file, kind+".path", m["path"])
	case "PatchStrategicMergeTransformer":
		for _, p := range stringList(m["paths"]) {
			if err := checkPath(file, kind+".paths", p); err != nil {
				return err
			}
		}
	case "ReplacementTransformer":
		for _, r := range mapList(m["replacements"]) {
			if err := checkPath(file, kind+".replacements.path", r["path"]); err != nil {
				return err
			}
		}
	case "HelmChartInflationGenerator":
		return checkHelmChart(file, kind, m)
	}
	return nil
}

// checkGeneratorSources checks the files, envs and env of a ConfigMap or
// Secret generator (files entries are "path" or "key=path").
func checkGeneratorSources(file, field string, g map[string]any) error {
	for _, f := range stringList(g["files"]) {
		if _, p, ok := strings.Cut(f, "="); ok {
			f = p
		}
		if err := checkPath(file, field+".files", f); err != nil {
			return err
		}
	}
	for _, e := range stringList(g["envs"]) {
		if err := checkPath(file, field+".envs", e); err != nil {
			return err
		}
	}
	return checkPath(file, field+".env", g["env"])
}

// checkHelmChart checks the fields of a Helm chart entry that name a place
// to load from. (Helm is disabled in the build, so kustomize refuses the
// chart anyway; a repository URL is still named as the reason.)
func checkHelmChart(file, field string, h map[string]any) error {
	for _, key := range []string{"repo", "chartRepoUrl", "valuesFile", "values", "chartHome"} {
		if err := checkPath(file, field+"."+key, h[key]); err != nil {
			return err
		}
	}
	for _, p := range stringList(h["additionalValuesFiles"]) {
		if err := checkPath(file, field+".additionalValuesFiles", p); err != nil {
			return err
		}
	}
	return nil
}

func checkPath(file, field string, v any) error {
	if s, ok := v.(string); ok && isRemote(s) {
		return remoteErr(file, field, s)
	}
	return nil
}

// scpUser is how kustomize recognises the user of an scp-like Git address
// (git@host:org/repo, user@host/org/repo).
var scpUser = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9-]*@`)

// isRemote reports whether kustomize could reach the network for p: any
// URL with a scheme (kustomize fetches http and https, and clones ssh,
// https, http and file URLs with git), go-getter's git:: prefix, an
// scp-like user@host address, a github.com path, or a Git ref query. It
// errs towards refusing: a local path never looks like any of these.
func isRemote(p string) bool {
	s := strings.TrimSpace(strings.ToLower(p))
	switch {
	case s == "":
		return false
	case strings.Contains(s, "://"), strings.HasPrefix(s, "git::"):
		return true
	case strings.HasPrefix(s, "github.com/"), strings.HasPrefix(s, "github.com:"):
		return true
	case scpUser.MatchString(strings.TrimSpace(p)):
		return true
	case strings.Contains(s, "?ref="), strings.Contains(s, "?version="), strings.Contains(s, "&ref="):
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
