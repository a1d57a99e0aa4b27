package render

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/kio"
	sigsyaml "sigs.k8s.io/yaml"
)

// jsonToYAML must print what sigs.k8s.io/yaml.JSONToYAML prints for every
// JSON that encoding/json writes: numbers of every kind and range, strings
// YAML would read as something else, escapes, nesting, empties.
func TestJSONToYAMLMatchesSigsYAML(t *testing.T) {
	values := []any{
		0, math.Copysign(0, -1), 1, -1, 1.0, 1.5, -2.25, 1e3, 1e20, 1e21, 1e-7, 123456789.125, math.MaxInt64, math.MinInt64,
		uint64(math.MaxUint64), math.MaxFloat64, math.SmallestNonzeroFloat64, 0.1, 100000000000000000000.0,
		"", " ", "yes", "no", "on", "off", "true", "null", "~", "1", "0x1F", "1e3", "0o17", "0b101", "1_000",
		"2001-12-14", "2001-12-14T21:59:43.10-05:00", "12:30", ".5", "-.inf", ".nan", "a: b", "- x", "#c", "&a", "*a",
		"!tag", "%x", "@x", "`x", "{}", "[]", "'q'", `"dq"`, "multi\nline\n", "trailing\n\n", "tab\there", "<>&",
		"\u2028\u2029", "ünïcödé ☃ 😀", "\x00\x01", "back\\slash", strings.Repeat("long ", 40),
		true, false, nil,
		map[string]any{}, []any{}, []any{map[string]any{}}, map[string]any{"a": []any{}},
		map[string]any{"z": 1, "a": 2, "a10": 3, "a2": 4, "B": 5, "": 6, "1": 7, "-": 8, "key with space": 9},
		[]any{1, "1", 1.5, nil, true, []any{[]any{}}},
	}
	for i, v := range values {
		doc := map[string]any{"value": v, "list": []any{v}, "nested": map[string]any{"v": v}}
		j, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		want, err := sigsyaml.JSONToYAML(j)
		if err != nil {
			t.Fatal(err)
		}
		got, err := jsonToYAML(j)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("value %d (%#v): got\n%s\nwant\n%s", i, v, got, want)
		}
	}
}

// canonicalYAML prints every object of the testdata as JSONToYAML over
// RNode.MarshalJSON did before it.
func TestCanonicalYAMLMatchesMarshalJSON(t *testing.T) {
	var files []string
	for _, root := range []string{"testdata", filepath.Join("..", "bench", "helm", "testdata")} {
		_ = filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
			if err == nil && !info.IsDir() && (strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")) {
				files = append(files, p)
			}
			return nil
		})
	}
	checked := 0
	check := func(f string, data []byte) {
		nodes, err := kio.FromBytes(data)
		if err != nil {
			return // templates and deliberately broken files
		}
		for _, n := range nodes {
			got, gotErr := canonicalYAML(n)
			j, err := n.MarshalJSON()
			if err != nil {
				if gotErr == nil {
					t.Errorf("%s: MarshalJSON fails (%v), canonicalYAML does not:\n%s", f, err, got)
				}
				continue
			}
			want, err := sigsyaml.JSONToYAML(j)
			if err != nil {
				t.Fatal(err)
			}
			if gotErr != nil {
				t.Fatalf("%s: %v", f, gotErr)
			}
			if got != string(want) {
				t.Errorf("%s: got\n%s\nwant\n%s", f, got, want)
			}
			checked++
		}
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		check(f, data)
	}
	check("edge cases", []byte(canonicalEdgeCases))
	if checked < 20 {
		t.Fatalf("only %d objects checked", checked)
	}
}

// canonicalEdgeCases are objects whose values YAML and JSON type
// differently: every number form, huge numbers, binary, timestamps,
// strings that look like something else, aliases and merge keys,
// empties, block scalars.
const canonicalEdgeCases = `apiVersion: v1
kind: ConfigMap
metadata:
  name: numbers
  annotations: {a: "1"}
spec:
  ints: [0, -0, 1, -1, 007, 0o17, 0x1F, 1_000, 9223372036854775807, -9223372036854775808, 9223372036854775808, 18446744073709551615, 18446744073709551616, 99999999999999999999999]
  floats: [1.0, -0.0, 0.0, 1.5, .5, -.5, 1e3, 1.5e3, 1E-7, 1e21, 1e20, 123456789.125, 3.0e+300, 2.5e-300, 100000000000000000000.0, 0.1, 1.7976931348623157e308]
  strings: ["", " ", "1", "1.0", "yes", "no", "on", "true", "null", "~", "0x1F", "2001-12-14", "12:30", "a: b", "- x", "#c", "&a", "*a", "!t", "%x", "@x", "` + "`" + `x", "{}", "[]", "'q'", "\"dq\"", "tab\there", "<>&", "\u2028", "\xff", "ünï ☃ 😀", "\0\x01"]
  bools: [true, false, yes, no, on, off, True, FALSE]
  nulls: [null, ~, Null, ]
  stamps: [2001-12-14, 2001-12-14t21:59:43.10-05:00, 2001-12-14 21:59:43.10 -5]
  tagged: [!!str 123, !!int "42", !!float 1, !!str true]
  binary: !!binary R0lGODlhDAAMAIQAAP//9/X17unp5WZmZgAAAOfn515eXvPz7Y6OjuDg4J+fn5OTk6enp56enmleECcgggoBADs=
  invalid: !!binary /w==
  empty: {map: {}, list: [], str: "", nothing: }
  block: |
    line one
      indented
    trailing spaces   
  folded: >
    folded
    text
  base: &base {x: 1, y: [a, b]}
  alias: *base
  merged:
    <<: *base
    z: 3
  keys: {"a10": 1, "a2": 2, "B": 3, "b": 4, "": 5, "1": 6, "-": 7, "key with space": 8, "ü": 9}
  deep: {a: {b: {c: {d: [[[]], [{}], [{e: [1, 2.5, "3"]}]]}}}}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: nonstring-keys
data:
  1: one
  true: yes
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: infinity
data:
  inf: .inf
  nan: .nan
`
