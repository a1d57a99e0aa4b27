//lint:file-ignore SA1019 kustomize still loads from its deprecated fields (bases, patchesStrategicMerge, patchesJson6902) and decodes builtin configs into the deprecated builtins types, so the check must read them too

package render

import (
	"regexp"
	"slices"
	"strings"

	"sigs.k8s.io/kustomize/api/builtins"
	kustypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/yaml"
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

// The check reads each file as kustomize reads it, never as a looser or
// stricter parser would: a kustomization through kustomize's own
// Kustomization.Unmarshal (whose JSON decoding matches field names
// case-insensitively and keeps the last of duplicate keys), and a builtin
// config into kustomize's own plugin type with sigs.k8s.io/yaml, as the
// plugin's Config does. A field spelled RESOURCES, or given twice, is
// therefore seen exactly where kustomize will load it from.

// checkKustomization refuses a kustomization that names a remote path in
// any field kustomize loads from, read as written and again after
// FixKustomization has moved the deprecated fields (bases, the
// patchesStrategicMerge and patchesJson6902 lists) to where kustomize
// reads them. (Plugin configs written inline are parsed and checked by
// sandboxFS.inspectKustomization.)
func checkKustomization(file string, k *kustypes.Kustomization) error {
	if err := checkKustomizationFields(file, k); err != nil {
		return err
	}
	fixed := *k
	fixed.FixKustomization()
	return checkKustomizationFields(file, &fixed)
}

func checkKustomizationFields(file string, k *kustypes.Kustomization) error {
	// Lists of paths only: an entry is a path even when it holds a newline
	// (isRemote trims it), so none is skipped as inline.
	for _, l := range []struct {
		field   string
		entries []string
	}{
		{"resources", k.Resources}, {"bases", k.Bases}, {"components", k.Components},
		{"crds", k.Crds}, {"configurations", k.Configurations},
	} {
		for _, e := range l.entries {
			if err := checkPath(file, l.field, e); err != nil {
				return err
			}
		}
	}
	// Lists whose entries may be YAML written inline: kustomize takes an
	// entry that parses as objects for inline and any other for a path.
	// An inline entry is inspected as a file of its own; every entry of
	// one line is also checked as a path, which errs towards refusing.
	for _, l := range inlineLists(k) {
		for _, e := range l.entries {
			if !strings.Contains(strings.TrimSpace(e), "\n") {
				if err := checkPath(file, l.field, e); err != nil {
					return err
				}
			}
		}
	}
	for _, l := range []struct {
		field   string
		patches []kustypes.Patch
	}{{"patches", k.Patches}, {"patchesJson6902", k.PatchesJson6902}} {
		for _, p := range l.patches {
			if err := checkPath(file, l.field+".path", p.Path); err != nil {
				return err
			}
		}
	}
	for _, r := range k.Replacements {
		if err := checkPath(file, "replacements.path", r.Path); err != nil {
			return err
		}
	}
	if err := checkPath(file, "openapi.path", k.OpenAPI["path"]); err != nil {
		return err
	}
	for _, g := range k.ConfigMapGenerator {
		if err := checkGeneratorSources(file, "configMapGenerator", g.KvPairSources); err != nil {
			return err
		}
	}
	for _, g := range k.SecretGenerator {
		if err := checkGeneratorSources(file, "secretGenerator", g.KvPairSources); err != nil {
			return err
		}
	}
	for _, h := range k.HelmCharts {
		if err := checkHelmChart(file, "helmCharts", h); err != nil {
			return err
		}
	}
	for _, h := range k.HelmChartInflationGenerator {
		for _, f := range []struct{ name, value string }{
			{"chartRepoUrl", h.ChartRepoURL}, {"chartHome", h.ChartHome}, {"values", h.Values},
		} {
			if err := checkPath(file, "helmChartInflationGenerator."+f.name, f.value); err != nil {
				return err
			}
		}
	}
	if g := k.HelmGlobals; g != nil {
		if err := checkPath(file, "helmGlobals.chartHome", g.ChartHome); err != nil {
			return err
		}
	}
	return nil
}

type namedList struct {
	field   string
	entries []string
}

// pluginLists are a kustomization's lists of plugin configs: each entry is
// a file, a folder (checkPluginFolder) or YAML written inline.
func pluginLists(k *kustypes.Kustomization) []namedList {
	return []namedList{{"generators", k.Generators}, {"transformers", k.Transformers}, {"validators", k.Validators}}
}

// inlineLists are a kustomization's lists whose entries are either paths
// or YAML written inline: the plugin lists and patchesStrategicMerge.
func inlineLists(k *kustypes.Kustomization) []namedList {
	psm := make([]string, len(k.PatchesStrategicMerge))
	for i, p := range k.PatchesStrategicMerge {
		psm[i] = string(p)
	}
	return append(pluginLists(k), namedList{"patchesStrategicMerge", psm})
}

// inlineTexts are the YAML texts written inline in a kustomization that
// kustomize may parse: every entry of the inline lists (kustomize takes
// one for inline YAML whenever it parses as objects, whatever it looks
// like: a flow mapping behind an anchor or a tag is one line), and inline
// patches.
func inlineTexts(k *kustypes.Kustomization) []string {
	var texts []string
	for _, l := range inlineLists(k) {
		texts = append(texts, l.entries...)
	}
	for _, p := range slices.Concat(k.Patches, k.PatchesJson6902) {
		if p.Patch != "" {
			texts = append(texts, p.Patch)
		}
	}
	return texts
}

// loadsNothing are the builtin kinds that load no file: their configs
// need no check. Every other builtin kind is checked (checkPluginConfig)
// or, when Plumb does not know it (one a later kustomize adds), refused.
var loadsNothing = map[string]bool{
	"AnnotationsTransformer": true, "HashTransformer": true, "IAMPolicyGenerator": true,
	"ImageTagTransformer": true, "LabelTransformer": true, "NamespaceTransformer": true,
	"PrefixTransformer": true, "SuffixTransformer": true, "ReplicaCountTransformer": true,
	"SortOrderTransformer": true,
}

// checkPluginConfig refuses a builtin generator or transformer config
// (apiVersion builtin, the only kind kustomize loads with plugins
// disabled) of kind that loads from a remote path, read from config (the
// object's JSON) into kustomize's own plugin type as its Config does. A
// config that type cannot hold is refused too: kustomize would fail on it,
// and a check that skipped it could be skipping what kustomize reads
// differently.
func checkPluginConfig(file, kind string, config []byte) error {
	var err error
	switch kind {
	case "ConfigMapGenerator":
		var p builtins.ConfigMapGeneratorPlugin
		if err = yaml.Unmarshal(config, &p); err == nil {
			return checkGeneratorSources(file, kind, p.KvPairSources)
		}
	case "SecretGenerator":
		var p builtins.SecretGeneratorPlugin
		if err = yaml.Unmarshal(config, &p); err == nil {
			return checkGeneratorSources(file, kind, p.KvPairSources)
		}
	case "PatchTransformer":
		var p builtins.PatchTransformerPlugin
		if err = yaml.Unmarshal(config, &p); err == nil {
			return checkPath(file, kind+".path", p.Path)
		}
	case "PatchJson6902Transformer":
		var p builtins.PatchJson6902TransformerPlugin
		if err = yaml.Unmarshal(config, &p); err == nil {
			return checkPath(file, kind+".path", p.Path)
		}
	case "PatchStrategicMergeTransformer":
		var p builtins.PatchStrategicMergeTransformerPlugin
		if err = yaml.Unmarshal(config, &p); err == nil {
			for _, path := range p.Paths {
				if err := checkPath(file, kind+".paths", string(path)); err != nil {
					return err
				}
			}
			return nil
		}
	case "ReplacementTransformer":
		var p builtins.ReplacementTransformerPlugin
		if err = yaml.Unmarshal(config, &p); err == nil {
			for _, r := range p.ReplacementList {
				if err := checkPath(file, kind+".replacements.path", r.Path); err != nil {
					return err
				}
			}
			return nil
		}
	case "ValueAddTransformer":
		var p builtins.ValueAddTransformerPlugin
		if err = yaml.Unmarshal(config, &p); err == nil {
			return checkPath(file, kind+".targetFilePath", p.TargetFilePath)
		}
	case "HelmChartInflationGenerator":
		var p builtins.HelmChartInflationGeneratorPlugin
		if err = yaml.Unmarshal(config, &p); err == nil {
			if err := checkPath(file, kind+".chartHome", p.ChartHome); err != nil {
				return err
			}
			return checkHelmChart(file, kind, p.HelmChart)
		}
	default:
		if loadsNothing[kind] {
			return nil
		}
		return buildErr("%s: builtin %s is not a kustomize builtin Plumb checks for remote paths; it is refused", file, kind)
	}
	return buildErr("%s: a %s config kustomize cannot read: %v", file, kind, err)
}

// checkGeneratorSources checks the files, envs and env of a ConfigMap or
// Secret generator (files entries are "path" or "key=path").
func checkGeneratorSources(file, field string, g kustypes.KvPairSources) error {
	for _, f := range g.FileSources {
		if _, p, ok := strings.Cut(f, "="); ok {
			f = p
		}
		if err := checkPath(file, field+".files", f); err != nil {
			return err
		}
	}
	for _, e := range g.EnvSources {
		if err := checkPath(file, field+".envs", e); err != nil {
			return err
		}
	}
	return checkPath(file, field+".env", g.EnvSource)
}

// checkHelmChart checks the fields of a Helm chart entry that name a place
// to load from. (Helm is disabled in the build, so kustomize refuses the
// chart anyway; a repository URL is still named as the reason.)
func checkHelmChart(file, field string, h kustypes.HelmChart) error {
	for _, f := range []struct{ name, value string }{{"repo", h.Repo}, {"valuesFile", h.ValuesFile}} {
		if err := checkPath(file, field+"."+f.name, f.value); err != nil {
			return err
		}
	}
	for _, p := range h.AdditionalValuesFiles {
		if err := checkPath(file, field+".additionalValuesFiles", p); err != nil {
			return err
		}
	}
	return nil
}

func checkPath(file, field, p string) error {
	if isRemote(p) {
		return remoteErr(file, field, p)
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
