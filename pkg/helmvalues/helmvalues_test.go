package helmvalues

import (
	"strings"
	"testing"
)

func TestSetPathTakesTheWholeValue(t *testing.T) {
	for _, tc := range []struct {
		path, value string
		want        any
	}{
		{"a.b", "8080", int64(8080)},
		{"a.b", "true", true},
		{"a.b", "0123", "0123"},
		{"a.b", `"8080"`, "8080"},
		{"a.b", `'true'`, "true"},
		{"a.b", "x,c=d", "x,c=d"},
		{"a.b", "{x,y}", "{x,y}"},
		{"a.b", `back\slash`, `back\slash`},
		{"a.b", "", ""},
	} {
		values := map[string]any{"a": map[string]any{"keep": 1}}
		if err := setPath(values, tc.path, tc.value); err != nil {
			t.Fatalf("%q: %v", tc.value, err)
		}
		a := values["a"].(map[string]any)
		if a["b"] != tc.want || a["keep"] != 1 || len(values) != 1 {
			t.Errorf("%q: got %#v, want a.b = %#v and nothing else changed", tc.value, values, tc.want)
		}
	}
	values := map[string]any{}
	if err := setPath(values, `list[1].name`, "x"); err != nil {
		t.Fatal(err)
	}
	if l, ok := values["list"].([]any); !ok || len(l) != 2 || l[1].(map[string]any)["name"] != "x" {
		t.Errorf("list index: got %#v", values)
	}
}

func TestParseRefusesAliasBombsAndHidesSecrets(t *testing.T) {
	var b strings.Builder
	b.WriteString("l0: &l0 [x,x,x,x,x,x,x,x,x]\n")
	for i := 1; i <= 8; i++ {
		b.WriteString("l" + string(rune('0'+i)) + ": &l" + string(rune('0'+i)) + " [")
		for j := 0; j < 9; j++ {
			if j > 0 {
				b.WriteString(",")
			}
			b.WriteString("*l" + string(rune('0'+i-1)))
		}
		b.WriteString("]\n")
	}
	m := &merger{limits: Limits{}.withDefaults()}
	_, err := m.parse("bomb", []byte(b.String()), false)
	if _, ok := err.(*LimitError); !ok || !strings.Contains(err.Error(), "--max-yaml-nodes") {
		t.Fatalf("alias bomb: got %v, want a LimitError naming --max-yaml-nodes", err)
	}

	_, err = m.parse("Secret s key k", []byte("password: [hunter2\n"), true)
	if err == nil || strings.Contains(err.Error(), "hunter2") || !strings.Contains(err.Error(), "Secret s key k") {
		t.Fatalf("secret parse error: got %v", err)
	}
	_, err = m.parse("Secret s key k", []byte("just-a-hunter2-string"), true)
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("a secret scalar: got %v", err)
	}

	doc, err := m.parse("ConfigMap", []byte("a: 1\nnested: {b: x}\n"), false)
	if err != nil || doc["a"] != float64(1) || doc["nested"].(map[string]any)["b"] != "x" {
		t.Fatalf("got %#v, %v; want numbers as Helm reads them (float64)", doc, err)
	}
	doc, err = m.parse("empty", []byte(""), false)
	if err != nil || doc == nil || len(doc) != 0 {
		t.Fatalf("empty: got %#v, %v", doc, err)
	}
}

func TestMergeBudget(t *testing.T) {
	m := &merger{limits: Limits{MaxBytes: 10}.withDefaults()}
	if err := m.charge("a", 6); err != nil {
		t.Fatal(err)
	}
	if err := m.charge("b", 5); err == nil || !strings.Contains(err.Error(), "--max-values-size") {
		t.Fatalf("got %v", err)
	}
}
