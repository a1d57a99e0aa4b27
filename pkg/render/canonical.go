package render

import (
	"bytes"
	"encoding/json"
	"strconv"

	yamlv2 "go.yaml.in/yaml/v2"
)

// jsonToYAML is sigs.k8s.io/yaml.JSONToYAML, byte for byte, for the JSON
// that encoding/json writes, at a fraction of its cost. JSONToYAML parses
// the JSON with the YAML parser only to type its numbers as go-yaml types
// plain scalars; here encoding/json parses it (numbers kept as their text)
// and each number is typed by go-yaml's own rule (resolve in
// go.yaml.in/yaml/v2: an int if it parses as one, else a uint64, else a
// float64), so go-yaml's encoder gets the very tree JSONToYAML gives it.
// TestJSONToYAMLMatchesSigsYAML holds the two together.
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

// yamlNumber types a JSON number's text as go-yaml's resolve does for a
// plain scalar: JSON numbers are never timestamps, have no underscores and
// no 0b, 0o or 0x prefixes, and always match go-yaml's float syntax.
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
