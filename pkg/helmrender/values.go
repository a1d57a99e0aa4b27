package helmrender

import (
	"strings"

	"helm.sh/helm/v4/pkg/strvals"

	"plumb.dev/pkg/render"
)

// MergeValues merges layers of user values in order, each over those
// before it, as the helm CLI merges `-f` values files (pkg/cli/values):
// two maps merge key by key, anything else — a list, a scalar, a null —
// replaces. A HelmRelease's values are MergeValues(valuesFrom in order...,
// spec.values); Render then coalesces them over the chart's own values.
// The layers are not changed; the result shares no map with them.
func MergeValues(layers ...map[string]any) map[string]any {
	out := map[string]any{}
	for _, l := range layers {
		out = mergeMaps(out, l)
	}
	return out
}

func mergeMaps(a, b map[string]any) map[string]any {
	out := make(map[string]any, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		if bm, ok := v.(map[string]any); ok {
			if am, ok := out[k].(map[string]any); ok {
				out[k] = mergeMaps(am, bm)
				continue
			}
			out[k] = mergeMaps(nil, bm)
			continue
		}
		out[k] = v
	}
	return out
}

// SetValue sets value, as a string, at targetPath in values: a
// valuesFrom's targetPath, in Helm's --set path syntax ("a.b[0].c", a
// backslash escaping a dot), as a single string value as in Flux. The value
// is taken whole: commas and backslashes in it are not --set syntax.
func SetValue(values map[string]any, targetPath, value string) error {
	if targetPath == "" {
		return render.BuildError("an empty targetPath")
	}
	escaped := strings.NewReplacer(`\`, `\\`, `,`, `\,`).Replace(value)
	if err := strvals.ParseIntoString(targetPath+"="+escaped, values); err != nil {
		return render.BuildError("targetPath %q: %v", targetPath, err)
	}
	return nil
}
