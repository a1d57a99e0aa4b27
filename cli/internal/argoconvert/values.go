package argoconvert

import (
	"strings"

	"helm.sh/helm/v4/pkg/strvals"
)

// setValue applies one `helm --set name=value` (or --set-string) to
// values, as Argo CD passes its Helm parameters: a comma in the value is
// part of it, not a separator.
func setValue(name, value string, forceString bool, values map[string]any) error {
	arg := name + "=" + strings.ReplaceAll(value, ",", `\,`)
	if forceString {
		return strvals.ParseIntoString(arg, values)
	}
	return strvals.ParseInto(arg, values)
}

// templatePlaceholder stands for a template's text while --set parses
// the parameter's name.
const templatePlaceholder = "plumb-convert-template-placeholder"

// replacePlaceholder puts text where setValue wrote the placeholder.
func replacePlaceholder(v any, text string) {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if e == templatePlaceholder {
				t[k] = text
				continue
			}
			replacePlaceholder(e, text)
		}
	case []any:
		for i, e := range t {
			if e == templatePlaceholder {
				t[i] = text
				continue
			}
			replacePlaceholder(e, text)
		}
	}
}
