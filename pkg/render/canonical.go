package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf8"

	yamlv2 "go.yaml.in/yaml/v2"
	yaml "go.yaml.in/yaml/v3"
)

// The canonical YAML form of an object is what `kustomize build` prints:
// sigs.k8s.io/yaml.JSONToYAML of the object's JSON. JSONToYAML parses the
// JSON with go-yaml's YAML parser, only so that go-yaml types its numbers
// as it types plain scalars, and prints the tree with go-yaml's encoder;
// that parse is most of a render's own cost. The two functions below give
// go-yaml's encoder the very tree JSONToYAML gives it, cheaper:
//
//   - jsonToYAML from JSON text: encoding/json parses it, numbers kept as
//     their text, and each number is typed by go-yaml's rule;
//   - yamlOfJSONValue from the value encoding/json would have printed (what
//     yaml.v3 decodes an object into), without printing it: each value is
//     what its JSON text would parse back to.
//
// go-yaml's rule for a plain scalar (resolve in go.yaml.in/yaml/v2), for
// the text of a JSON number — never a timestamp, never with underscores or
// 0b/0o/0x prefixes, always matching go-yaml's float syntax — is: an int if
// it parses as one, else a uint64, else a float64, else (out of range) the
// string. TestJSONToYAMLMatchesSigsYAML and
// TestCanonicalYAMLMatchesMarshalJSON hold all of this to JSONToYAML.

// jsonToYAML is sigs.k8s.io/yaml.JSONToYAML for JSON that encoding/json
// wrote.
func jsonToYAML(j []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	tree, err := yamlTyped(v)
	if err != nil {
		return nil, err
	}
	return yamlv2.Marshal(tree)
}

// yamlTyped replaces every json.Number in v, in place, by the value go-yaml
// resolves its text to.
func yamlTyped(v any) (any, error) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			t, err := yamlTyped(e)
			if err != nil {
				return nil, err
			}
			x[k] = t
		}
		return x, nil
	case []any:
		if x == nil {
			return nil, nil
		}
		for i, e := range x {
			t, err := yamlTyped(e)
			if err != nil {
				return nil, err
			}
			x[i] = t
		}
		return x, nil
	case json.Number:
		return yamlNumber(string(x)), nil
	}
	return v, nil
}

// yamlNumber types a JSON number's text as go-yaml does.
func yamlNumber(s string) any {
	if i, err := strconv.ParseInt(s, 0, 64); err == nil {
		if i == int64(int(i)) {
			return int(i)
		}
		return i
	}
	if u, err := strconv.ParseUint(s, 0, 64); err == nil {
		return u
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return f
	}
	// Out of float64's range: go-yaml leaves it a string.
	return s
}

// yamlOfJSONValue is jsonToYAML(json.Marshal(m)) for what yaml.v3 decodes
// an object into. It changes m's values in place (jsonTyped).
func yamlOfJSONValue(m map[string]any) ([]byte, error) {
	tree, err := jsonTyped(m)
	if err != nil {
		return nil, err
	}
	return yamlv2.Marshal(tree)
}

// jsonTyped returns v as encoding/json would print it and go-yaml would
// read it back: numbers typed as go-yaml types their JSON text, strings
// with invalid UTF-8 repaired as encoding/json repairs them, a nil map or
// slice as null, as encoding/json prints it. Maps and slices are changed
// in place: v is
// a decoded value of the caller's own, and copying every map of every
// object was a tenth of the printing's allocations. A value JSON cannot
// hold is an error, as it is for json.Marshal.
func jsonTyped(v any) (any, error) {
	switch x := v.(type) {
	case nil, bool:
		return x, nil
	case string:
		if utf8.ValidString(x) {
			return x, nil
		}
		return jsonRoundTrip(x)
	case map[string]any:
		if x == nil {
			return nil, nil
		}
		for k := range x {
			if !utf8.ValidString(k) {
				// Rare enough to take the long way for the whole map.
				return jsonRoundTrip(x)
			}
		}
		for k, e := range x {
			t, err := jsonTyped(e)
			if err != nil {
				return nil, err
			}
			x[k] = t
		}
		return x, nil
	case []any:
		if x == nil {
			return nil, nil
		}
		for i, e := range x {
			t, err := jsonTyped(e)
			if err != nil {
				return nil, err
			}
			x[i] = t
		}
		return x, nil
	case int:
		return x, nil
	case int64:
		return yamlNumber(strconv.FormatInt(x, 10)), nil
	case uint64:
		return yamlNumber(strconv.FormatUint(x, 10)), nil
	case float64:
		// encoding/json's own float format, then go-yaml's typing.
		j, err := json.Marshal(x)
		if err != nil {
			return nil, err
		}
		return yamlNumber(string(j)), nil
	}
	// Any other type (yaml.v3 decodes a mapping with keys that are not
	// all strings into map[interface{}]interface{}): what json.Marshal
	// says of it.
	return jsonRoundTrip(v)
}

// jsonRoundTrip prints v with encoding/json and reads it back as
// jsonToYAML would.
func jsonRoundTrip(v any) (any, error) {
	j, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.UseNumber()
	var out any
	if err := dec.Decode(&out); err != nil {
		return nil, fmt.Errorf("reading back %s: %w", j, err)
	}
	return yamlTyped(out)
}

// printsDifferently reports whether n holds what RNode.MarshalJSON, which
// prints the node and parses the text again, reads as something other than
// the node itself: yaml.v3 prints an empty null inside a flow collection
// ({a: }) as a quoted empty string, which reads back as "". canonicalYAML takes MarshalJSON's way
// for such an object, so its output stays that of kustomize.
func printsDifferently(n *yaml.Node, inFlow bool) bool {
	if n == nil {
		return false
	}
	if n.Kind == yaml.ScalarNode {
		return inFlow && n.Value == "" && n.ShortTag() == "!!null"
	}
	flow := inFlow || n.Style&yaml.FlowStyle != 0
	for _, c := range n.Content {
		if printsDifferently(c, flow) {
			return true
		}
	}
	return false
}
