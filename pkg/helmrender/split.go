package helmrender

import (
	"path"
	"sort"
	"strings"

	release "helm.sh/helm/v4/pkg/release/v1"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
)

// splitTemplates splits the engine's output into its documents, each with
// the template it came from, as releaseutil.SortManifests reads them:
// files in name order, partials (a base name starting with "_") and
// whitespace-only files skipped, each file split by the SDK's own
// releaseutil.SplitManifests, its documents in order.
//
// Render does not call SortManifests itself: it parses every document
// with the YAML-to-JSON converter only to read its head, and Render parses
// every document anyway (render.Budget), so the split and the one decision
// SortManifests takes that changes the output — a document whose
// helm.sh/hook names an event Helm does not know is left out (keptHook) —
// are made on that one parse. Everything else SortManifests does is the
// install order of a release, which pkg/render's canonical order replaces.
func splitTemplates(files map[string]string) []document {
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	var docs []document
	for _, name := range names {
		content := files[name]
		if strings.HasPrefix(path.Base(name), "_") || strings.TrimSpace(content) == "" {
			continue
		}
		entries := releaseutil.SplitManifests(content)
		keys := make([]string, 0, len(entries))
		for k := range entries {
			keys = append(keys, k)
		}
		sort.Sort(releaseutil.BySplitManifestsOrder(keys))
		for _, k := range keys {
			docs = append(docs, document{source: name, content: entries[k]})
		}
	}
	return docs
}

// hookEvents are the hook events Helm knows (releaseutil's events table):
// a document whose helm.sh/hook names another is not rendered.
var hookEvents = map[string]bool{
	release.HookPreInstall.String():   true,
	release.HookPostInstall.String():  true,
	release.HookPreDelete.String():    true,
	release.HookPostDelete.String():   true,
	release.HookPreUpgrade.String():   true,
	release.HookPostUpgrade.String():  true,
	release.HookPreRollback.String():  true,
	release.HookPostRollback.String(): true,
	release.HookTest.String():         true,
	"test-success":                    true, // Helm 2's name for test
}

// keptHook reports whether n is rendered: it is no hook, or every event of
// its helm.sh/hook is one Helm knows.
func keptHook(n *kyaml.RNode) bool {
	hooks, ok := n.GetAnnotations()[release.HookAnnotation]
	if !ok {
		return true
	}
	for _, h := range strings.Split(hooks, ",") {
		if !hookEvents[strings.ToLower(strings.TrimSpace(h))] {
			return false
		}
	}
	return true
}
