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
		0, -0.0, 1, -1, 1.0, 1.5, -2.25, 1e3, 1e20, 1e21, 1e-7, 123456789.125, math.MaxInt64, math.MinInt64,
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
	for _, root := range []string{"testdata", filepath.Join("..", "helmrender", "bench", "testdata")} {
		_ = filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
			if err == nil && !info.IsDir() && (strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")) {
				files = append(files, p)
			}
			return nil
		})
	}
	checked := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		nodes, err := kio.FromBytes(data)
		if err != nil {
			continue // templates and deliberately broken files
		}
		for _, n := range nodes {
			j, err := n.MarshalJSON()
			if err != nil {
				continue
			}
			want, err := sigsyaml.JSONToYAML(j)
			if err != nil {
				t.Fatal(err)
			}
			got, err := canonicalYAML(n)
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if got != string(want) {
				t.Errorf("%s: got\n%s\nwant\n%s", f, got, want)
			}
			checked++
		}
	}
	if checked < 20 {
		t.Fatalf("only %d objects checked", checked)
	}
}
