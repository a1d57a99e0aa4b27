package helmrender

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	texttemplate "text/template"
	"unicode/utf8"

	"github.com/mitchellh/copystructure"
	yamlv2 "go.yaml.in/yaml/v2"
	"helm.sh/helm/v4/pkg/chart/common"
	sigsyaml "sigs.k8s.io/yaml"
)

// templateFuncs replace six of the engine's functions — toYaml,
// mustToYaml, fromYaml and fromYamlArray without the JSON round trip the
// SDK's take, and sprig's deepCopy and mustDeepCopy without reflection —
// with ones that give the same results (engine.Engine's
// CustomTemplateFuncs is the SDK's own way to set them).
//
// The SDK's toYaml is sigs.k8s.io/yaml.Marshal: encoding/json prints the
// value, go-yaml v2 parses that JSON into plain Go values, and go-yaml v2
// prints those. Its fromYaml is sigs.k8s.io/yaml.Unmarshal: go-yaml v2
// parses, the result is printed as JSON and decoded again by
// encoding/json. Charts built the usual way (every component's values
// through `toYaml | fromYaml`, `toYaml | nindent` in every template) spend
// a third of a render in those round trips. The functions here build the
// values the round trip would have produced directly — for toYaml the
// plain values go-yaml v2 would parse out of the JSON, for fromYaml the
// values encoding/json would decode — and go-yaml v2 parses and prints
// them as before.
//
// Sprig's deepCopy is copystructure.Copy, a reflective walk with a
// callback per node; charts that merge every component's values over
// defaults copy the defaults each time. The copy here walks the same
// plain values by type.
//
// They do so only for the values they can account for exactly: maps with
// string keys, slices, strings, booleans, nil and numbers, nested at most
// fastDepth deep. Anything else — structs, typed maps and slices other
// than the common ones, a float the JSON encoder refuses (NaN, ±Inf), a
// string JSON or go-yaml would change (invalid UTF-8, characters go-yaml's
// reader refuses or reads as a line break), a long map key, a YAML key
// that is not a string — goes to the SDK's own path, unchanged, errors and all.
// funcs_test.go holds both paths to the same bytes on a corpus and a fuzz
// target; TestGoldenHelmTemplate compares whole charts.
func templateFuncs() texttemplate.FuncMap {
	return texttemplate.FuncMap{
		"toYaml":        toYAML,
		"mustToYaml":    mustToYAML,
		"fromYaml":      fromYAML,
		"fromYamlArray": fromYAMLArray,
		"deepCopy":      copyValue,
		"mustDeepCopy":  mustCopyValue,
	}
}

// fastDepth is how deep a value may nest for the direct path; deeper ones
// take the SDK's, whose parser counts depth against a limit of its own.
const fastDepth = 100

// fastKeyBytes is the longest map key the direct path takes. go-yaml
// refuses a key longer than 1,024 characters, and JSON prints a byte as up
// to six (\u0000), so longer keys take the SDK's path, which fails on them
// as it always has.
const fastKeyBytes = 160

func toYAML(v any) string {
	if out, ok := printYAML(v); ok {
		return out
	}
	return sdkToYAML(v)
}

func mustToYAML(v any) string {
	if out, ok := printYAML(v); ok {
		return out
	}
	return sdkMustToYAML(v)
}

// printYAML prints v as sigs.k8s.io/yaml.Marshal would, and says false
// when v holds something only the SDK's path accounts for.
func printYAML(v any) (string, bool) {
	plain, ok := jsonAsYAML(v, 0)
	if !ok {
		return "", false
	}
	data, err := yamlv2.Marshal(plain)
	if err != nil {
		return "", false
	}
	return strings.TrimSuffix(string(data), "\n"), true
}

// sdkToYAML, sdkMustToYAML, sdkFromYAML and sdkFromYAMLArray are the
// SDK's functions (helm.sh/helm/v4/pkg/engine, funcs.go), which the
// engine does not export.
func sdkToYAML(v any) string {
	data, err := sigsyaml.Marshal(v)
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(string(data), "\n")
}

func sdkMustToYAML(v any) string {
	data, err := sigsyaml.Marshal(v)
	if err != nil {
		panic(err)
	}
	return strings.TrimSuffix(string(data), "\n")
}

func sdkFromYAML(str string) map[string]any {
	m := map[string]any{}
	if err := sigsyaml.Unmarshal([]byte(str), &m); err != nil {
		m["Error"] = err.Error()
	}
	return m
}

func sdkFromYAMLArray(str string) []any {
	a := []any{}
	if err := sigsyaml.Unmarshal([]byte(str), &a); err != nil {
		a = []any{err.Error()}
	}
	return a
}

// jsonAsYAML is what go-yaml v2 parses out of encoding/json's printing of
// v, built without printing: objects become map[any]any with string keys,
// numbers int, uint64 or float64 as go-yaml resolves the JSON number.
func jsonAsYAML(v any, depth int) (any, bool) {
	if depth > fastDepth {
		return nil, false
	}
	switch v := v.(type) {
	case nil:
		return nil, true
	case string:
		return v, yamlRoundTrips(v)
	case bool:
		return v, true
	case float64:
		return jsonNumberAsYAML(v)
	case int:
		return v, true
	case int64:
		return int(v), true
	case int32:
		return int(v), true
	case uint64:
		if v > math.MaxInt64 {
			return v, true
		}
		return int(v), true
	case map[string]any:
		return jsonObjectAsYAML(v, depth)
	case common.Values:
		return jsonObjectAsYAML(v, depth)
	case []any:
		if v == nil {
			return nil, true
		}
		return eachElement(v, depth, jsonAsYAML)
	case []string:
		if v == nil {
			return nil, true
		}
		out := make([]any, len(v))
		for i, e := range v {
			if !yamlRoundTrips(e) {
				return nil, false
			}
			out[i] = e
		}
		return out, true
	}
	return nil, false
}

func jsonObjectAsYAML(m map[string]any, depth int) (any, bool) {
	if m == nil {
		return nil, true
	}
	out := make(map[any]any, len(m))
	for k, e := range m {
		if len(k) > fastKeyBytes || !yamlRoundTrips(k) {
			return nil, false
		}
		var ok bool
		if out[k], ok = jsonAsYAML(e, depth+1); !ok {
			return nil, false
		}
	}
	return out, true
}

// jsonNumberAsYAML prints f as encoding/json does and resolves the text as
// go-yaml v2 resolves a plain scalar made of digits: an int when it parses
// as one, else a uint64, else the float.
func jsonNumberAsYAML(f float64) (any, bool) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return nil, false // encoding/json refuses them
	}
	text, err := json.Marshal(f)
	if err != nil {
		return nil, false
	}
	s := string(text)
	if i, err := strconv.ParseInt(s, 0, 64); err == nil {
		return int(i), true
	}
	if u, err := strconv.ParseUint(s, 0, 64); err == nil {
		return u, true
	}
	return f, true
}

// yamlRoundTrips says whether s comes back unchanged from encoding/json's
// printing read by go-yaml v2: valid UTF-8 (JSON replaces invalid bytes),
// and none of the characters JSON prints as they are that go-yaml's reader
// refuses (DEL, the C1 controls, U+FFFE, U+FFFF) or reads as a line break
// or byte order mark (NEL, U+FEFF). JSON escapes the C0 controls and
// U+2028 and U+2029, which go-yaml reads back as they were.
func yamlRoundTrips(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 0x7f {
			return nonASCIIRoundTrips(s[i:])
		}
	}
	return true
}

func nonASCIIRoundTrips(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		switch {
		case r == 0x7f, r >= 0x80 && r <= 0x9f, r == 0xfeff, r == 0xfffe, r == 0xffff:
			return false
		}
	}
	return true
}

func fromYAML(str string) map[string]any {
	var parsed any
	if err := yamlv2.Unmarshal([]byte(str), &parsed); err == nil {
		if obj, ok := parsed.(map[any]any); ok {
			if m, ok := yamlObjectAsJSON(obj, 0); ok {
				return m
			}
		}
	}
	return sdkFromYAML(str)
}

func fromYAMLArray(str string) []any {
	var parsed any
	if err := yamlv2.Unmarshal([]byte(str), &parsed); err == nil {
		if list, ok := parsed.([]any); ok {
			if a, ok := yamlAsJSON(list, 0); ok {
				return a.([]any)
			}
		}
	}
	return sdkFromYAMLArray(str)
}

// yamlAsJSON is what encoding/json decodes from the JSON that
// sigs.k8s.io/yaml prints of a value go-yaml v2 parsed: numbers become
// float64, objects map[string]any.
func yamlAsJSON(v any, depth int) (any, bool) {
	if depth > fastDepth {
		return nil, false
	}
	switch v := v.(type) {
	case nil:
		return nil, true
	case string:
		return v, utf8.ValidString(v)
	case bool:
		return v, true
	case int:
		return float64(v), true
	case int64:
		return float64(v), true
	case uint64:
		return float64(v), true
	case float64:
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return nil, false // encoding/json refuses them
		}
		return v, true
	case []any:
		return eachElement(v, depth, yamlAsJSON)
	case map[any]any:
		m, ok := yamlObjectAsJSON(v, depth)
		return m, ok
	}
	return nil, false
}

// yamlObjectAsJSON takes string keys only: sigs.k8s.io/yaml prints the
// others (numbers, booleans) as strings, where two keys can become one.
func yamlObjectAsJSON(obj map[any]any, depth int) (map[string]any, bool) {
	out := make(map[string]any, len(obj))
	for k, e := range obj {
		key, ok := k.(string)
		if !ok || !utf8.ValidString(key) {
			return nil, false
		}
		if out[key], ok = yamlAsJSON(e, depth+1); !ok {
			return nil, false
		}
	}
	return out, true
}

func copyValue(v any) any {
	if c, ok := copyPlain(v, 0); ok && v != nil {
		return c
	}
	return sdkDeepCopy(v)
}

func mustCopyValue(v any) (any, error) {
	if c, ok := copyPlain(v, 0); ok && v != nil {
		return c, nil
	}
	return copystructure.Copy(v)
}

// sdkDeepCopy is sprig's deepCopy.
func sdkDeepCopy(v any) any {
	c, err := copystructure.Copy(v)
	if err != nil {
		panic("deepCopy error: " + err.Error())
	}
	return c
}

// copyPlain copies maps with string keys and slices of values, down to
// their strings, numbers, booleans and nils, as copystructure.Copy does.
// (copystructure panics on a nil at the top, which is left to it.)
func copyPlain(v any, depth int) (any, bool) {
	if depth > fastDepth {
		return nil, false
	}
	switch v := v.(type) {
	case nil, string, bool, int, int64, float64:
		return v, true
	case map[string]any:
		return copyPlainMap(v, depth)
	case common.Values:
		m, ok := copyPlainMap(v, depth)
		return common.Values(m), ok
	case []any:
		if v == nil {
			return v, true
		}
		return eachElement(v, depth, copyPlain)
	}
	return nil, false
}

func copyPlainMap(m map[string]any, depth int) (map[string]any, bool) {
	if m == nil {
		return m, true
	}
	out := make(map[string]any, len(m))
	for k, e := range m {
		var ok bool
		if out[k], ok = copyPlain(e, depth+1); !ok {
			return nil, false
		}
	}
	return out, true
}

// eachElement converts every element of list one level deeper with
// convert, into a new slice, and says false as soon as one cannot be.
func eachElement(list []any, depth int, convert func(any, int) (any, bool)) ([]any, bool) {
	out := make([]any, len(list))
	for i, e := range list {
		var ok bool
		if out[i], ok = convert(e, depth+1); !ok {
			return nil, false
		}
	}
	return out, true
}
