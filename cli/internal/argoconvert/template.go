package argoconvert

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// fastTag is one of fasttemplate's {{ key }} tags.
var fastTag = regexp.MustCompile(`\{\{([^{}]*)\}\}`)

var (
	identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	segmentTag = regexp.MustCompile(`^path\[([0-9]+)\]$`)
	// nameNormalized is the clusters generator's DNS-safe name in Argo
	// CD; a Plumb element's name is a Secret's, already DNS-safe.
	goNameNormalized = regexp.MustCompile(`\.nameNormalized\b`)
)

// mapPrefixes are the data whose keys are free text (label and
// annotation keys, values' names): the rest of the tag is one key.
var mapPrefixes = []string{"metadata.labels.", "metadata.annotations.", "values."}

// goAction turns one of fasttemplate's keys into the Go template action
// reading the same data from ObjectSet's element.
func goAction(key string) string {
	key = strings.TrimSpace(key)
	if m := segmentTag.FindStringSubmatch(key); m != nil {
		return fmt.Sprintf("{{ index .path.segments %s }}", m[1])
	}
	switch key {
	case "path":
		// The folder of a git generator's element; .path is an object.
		return "{{ .path.path }}"
	case "nameNormalized":
		return "{{ .name }}"
	}
	for _, p := range mapPrefixes {
		if rest, ok := strings.CutPrefix(key, p); ok && !identifier.MatchString(rest) {
			return fmt.Sprintf("{{ index .%s %s }}", strings.TrimSuffix(p, "."), strconv.Quote(rest))
		}
	}
	parts := strings.Split(key, ".")
	plain := true
	for _, part := range parts {
		if !identifier.MatchString(part) {
			plain = false
		}
	}
	if plain {
		return "{{ ." + key + " }}"
	}
	quoted := make([]string, len(parts))
	for i, p := range parts {
		quoted[i] = strconv.Quote(p)
	}
	return "{{ index . " + strings.Join(quoted, " ") + " }}"
}

// templateText turns a string of Argo CD's template into a Go
// template's: fasttemplate tags become actions; a goTemplate's text is
// kept, but for the names Plumb's elements spell otherwise.
func (c *converter) templateText(s string, goTemplate bool) string {
	if goTemplate {
		if goNameNormalized.MatchString(s) {
			c.n.addf("the clusters generator's .nameNormalized is .name in Plumb (a Secret's name, already DNS-safe)")
			s = goNameNormalized.ReplaceAllString(s, ".name")
		}
		return s
	}
	return fastTag.ReplaceAllStringFunc(s, func(tag string) string {
		return goAction(tag[2 : len(tag)-2])
	})
}

// translate applies templateText to every string of v, keys included.
func (c *converter) translate(v any, goTemplate bool) any {
	switch t := v.(type) {
	case string:
		return c.templateText(t, goTemplate)
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[c.templateText(k, goTemplate)] = c.translate(e, goTemplate)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = c.translate(e, goTemplate)
		}
		return out
	default:
		return v
	}
}
