package helmrender

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/chart/common"
)

// yamlFuncValues are values templates hand to toYaml: what values files,
// sprig and the engine produce, and the edge cases of the JSON round trip
// the direct path must match or leave to the SDK.
func yamlFuncValues() []any {
	cyclic := map[string]any{"a": 1}
	cyclic["self"] = cyclic
	deep := any("leaf")
	for range fastDepth + 5 {
		deep = map[string]any{"d": deep}
	}
	type labelled struct {
		Name string `json:"name"`
		Skip string `json:"-"`
	}
	strs := []string{
		"", "plain", "yes", "no", "on", "true", "null", "~", "1", "-1", "0x1f", "0o17", "1e3", ".inf", "-.inf", ".nan",
		"1_000", "0b101", "2001-12-14", "2001-12-14t21:59:43.10-05:00", "12:30", "<<", "=", "- item", "key: value",
		"# comment", "a #b", "[x]", "{y}", "*alias", "&anchor", "!tag", "%percent", "@at", "`tick", "'single'", "\"double\"",
		"multi\nline\n", "trailing \n", " leading", "trailing ", "tab\there", "\ttab", "cr\rlf", "nul\x00byte", "bell\a",
		"del\x7f", "nel\u0085x", "c1\u0090x", "bom\ufeffx", "nonchar\ufffe", "nonchar\uffff", "ls\u2028ps\u2029",
		"invalid\xffutf8", "\xc3(", "ünïcödé", "emoji 😀", "<html> & \"quotes\"", "back\\slash", "long " + string(make([]byte, 200)),
		string(make([]byte, fastKeyBytes)), string(make([]byte, fastKeyBytes+1)), strings.Repeat("k", 2000),
	}
	values := []any{
		nil, true, false, 0, 1, -1, 42, int64(math.MaxInt64), int64(math.MinInt64), int32(7), uint64(math.MaxUint64), uint64(5),
		0.0, math.Copysign(0, -1), 0.5, -1.25, 1e20, 1e21, 1.5e21, 1e-6, 1e-7, -1e-7, 123456789012345678901.0, float64(1 << 63), float64(1 << 64),
		math.MaxFloat64, math.SmallestNonzeroFloat64, 3.0, math.NaN(), math.Inf(1), math.Inf(-1), float32(1.5), uint8(3),
		map[string]any{}, map[string]any(nil), []any{}, []any(nil), []string{}, []string(nil), []string{"a", "yes", "nel\u0085"},
		common.Values{"replicas": 3.0, "image": map[string]any{"tag": "1.0"}}, map[string]string{"a": "b"}, []int{1, 2},
		[]byte("bytes"), labelled{Name: "n", Skip: "s"}, &labelled{Name: "p"}, cyclic, deep,
		map[string]any{"10": 1, "9": 2, "a10": 3, "a9": 4, "B": 5, "b": 6, "": 7, "yes": 8, "null": 9, "1e3": 10, "nel\u0085": 11},
		map[string]any{"list": []any{1, "two", 3.5, nil, map[string]any{"x": []any{}}}, "nested": map[string]any{"m": map[string]any(nil)}},
	}
	for _, s := range strs {
		values = append(values, s, map[string]any{s: s}, []any{s})
	}
	return values
}

func TestToYAMLMatchesTheSDK(t *testing.T) {
	for i, v := range yamlFuncValues() {
		if got, want := toYAML(v), sdkToYAML(v); got != want {
			t.Errorf("value %d (%T %.60v): toYaml\n got %q\nwant %q", i, v, fmt.Sprint(v), got, want)
		}
		got, gotPanic := catch(func() string { return mustToYAML(v) })
		want, wantPanic := catch(func() string { return sdkMustToYAML(v) })
		if got != want || gotPanic != wantPanic {
			t.Errorf("value %d (%T): mustToYaml\n got %q (panic %q)\nwant %q (panic %q)", i, v, got, gotPanic, want, wantPanic)
		}
	}
}

// The direct path is taken for what charts hand to toYaml; were it not,
// the functions would match the SDK by being the SDK.
func TestToYAMLTakesTheDirectPathForPlainValues(t *testing.T) {
	plain := []any{
		map[string]any{"image": map[string]any{"repository": "nginx", "tag": "1.27"}, "replicas": 3.0, "ports": []any{80.0, 443.0},
			"env": []any{map[string]any{"name": "A", "value": "ünï"}}, "enabled": true, "extra": nil},
		common.Values{"a": []string{"x"}, "n": int64(2)}, "text", 1.5, []any{},
	}
	for i, v := range plain {
		if _, ok := printYAML(v); !ok {
			t.Errorf("value %d (%T) took the SDK's path", i, v)
		}
	}
	if _, ok := printYAML(struct{}{}); ok {
		t.Error("a struct took the direct path")
	}
}

func TestDeepCopyMatchesSprig(t *testing.T) {
	for i, v := range yamlFuncValues() {
		if m, ok := v.(map[string]any); ok && m["self"] != nil {
			continue // the cyclic map: copystructure recurses until the stack overflows
		}
		var want, got any
		_, wantPanic := catch(func() string { want = sdkDeepCopy(v); return "" })
		_, gotPanic := catch(func() string { got = copyValue(v); return "" })
		if wantPanic != gotPanic {
			t.Errorf("value %d (%T): copyValue panicked with %q, deepCopy with %q", i, v, gotPanic, wantPanic)
			continue
		}
		if !reflect.DeepEqual(got, want) && !bothNaN(got, want) {
			t.Errorf("value %d (%T): deepCopy\n got %#v\nwant %#v", i, v, got, want)
		}
		if reflect.TypeOf(got) != reflect.TypeOf(want) {
			t.Errorf("value %d: deepCopy gave a %T, sprig a %T", i, got, want)
		}
		if m, ok := v.(map[string]any); ok && len(m) > 0 {
			// A copy, not the same map.
			c := got.(map[string]any)
			for k := range c {
				c[k] = "changed"
			}
			if reflect.DeepEqual(m, c) {
				t.Errorf("value %d: copyValue returned the map itself", i)
			}
		}
		if v == nil {
			continue
		}
		gotMust, gotErr := mustCopyValue(v)
		if !reflect.DeepEqual(gotMust, want) && !bothNaN(gotMust, want) || gotErr != nil {
			t.Errorf("value %d: mustDeepCopy = %#v, %v; want %#v", i, gotMust, gotErr, want)
		}
	}
	nested := map[string]any{"a": map[string]any{"b": []any{map[string]any{"c": 1.0}}}}
	c := copyValue(nested).(map[string]any)
	c["a"].(map[string]any)["b"].([]any)[0].(map[string]any)["c"] = 2.0
	if nested["a"].(map[string]any)["b"].([]any)[0].(map[string]any)["c"] != 1.0 {
		t.Error("changing the copy changed the original")
	}
}

func bothNaN(a, b any) bool {
	x, ok1 := a.(float64)
	y, ok2 := b.(float64)
	return ok1 && ok2 && math.IsNaN(x) && math.IsNaN(y)
}

// yamlDocuments are what templates hand to fromYaml and fromYamlArray.
var yamlDocuments = []string{
	"", "a: 1", "a: 1\nb: [1, 2.5, x]\nc: {d: null}\n", "- 1\n- two\n", "[]", "{}", "scalar", "null", "~",
	"big: 18446744073709551615\nneg: -9223372036854775808\nbeyond: 18446744073709551616\n",
	"exp: 1e3\nhex: 0x1F\noct: 0o17\nbin: 0b101\nunderscore: 1_000\nfloat: .5\ninf: .inf\nnan: .nan\n",
	"when: 2001-12-14\nstamp: 2001-12-14t21:59:43.10-05:00\n", "yes: no\non: off\n", "1: one\n2: two\n",
	"true: bool\n", "~: null key\n", "? [a, b]\n: complex key\n",
	"base: &b {x: 1, y: 2}\nderived:\n  <<: *b\n  y: 3\n", "bin: !!binary aGVsbG8=\n", "bad: !!binary /w==\n",
	"str: !!str 123\nint: !!int \"7\"\nfloat: !!float 3\n", "escaped: \"\\xff\\u0085\\t\"\n", "a: [unclosed",
	"a: 1\na: 2\n", "list:\n- a: 1\n  b: [x, {y: z}]\n", "---\na: 1\n---\nb: 2\n", "\ufeffa: bom\n", "a:\tb\n",
	"- [nested, [deeper, [deepest]]]\n- {k: v}\n", "k: |\n  block\n  text\nf: >\n  folded\n  text\n",
}

func TestFromYAMLMatchesTheSDK(t *testing.T) {
	for _, doc := range yamlDocuments {
		compareFromYAML(t, doc)
	}
}

func compareFromYAML(t *testing.T, doc string) {
	t.Helper()
	// Where two keys become one ("1" and 1), the SDK keeps either, by map
	// order; there is no one answer to match.
	if !reflect.DeepEqual(sdkFromYAML(doc), sdkFromYAML(doc)) {
		return
	}
	if got, want := fromYAML(doc), sdkFromYAML(doc); !reflect.DeepEqual(got, want) {
		t.Errorf("fromYaml %q\n got %#v\nwant %#v", doc, got, want)
	}
	if got, want := fromYAMLArray(doc), sdkFromYAMLArray(doc); !reflect.DeepEqual(got, want) {
		t.Errorf("fromYamlArray %q\n got %#v\nwant %#v", doc, got, want)
	}
}

// FuzzYAMLFuncs holds all four functions to the SDK's on any document and
// on what fromYaml makes of it, the `toYaml | fromYaml` round trip charts
// use to merge values.
func FuzzYAMLFuncs(f *testing.F) {
	for _, doc := range yamlDocuments {
		f.Add(doc)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		compareFromYAML(t, doc)
		for _, v := range []any{sdkFromYAML(doc), sdkFromYAMLArray(doc), doc} {
			if got, want := toYAML(v), sdkToYAML(v); got != want {
				t.Errorf("toYaml of %q:\n got %q\nwant %q", doc, got, want)
			}
		}
	})
}

func catch(f func() string) (out, panicked string) {
	defer func() {
		if p := recover(); p != nil {
			panicked = fmt.Sprint(p)
		}
	}()
	return f(), ""
}
