package helmrender

import (
	"reflect"
	"testing"
)

// The layers merge in order, later over earlier, maps key by key; the
// result, rendered, is coalesced over the chart's values.
func TestMergeValuesOrder(t *testing.T) {
	first := map[string]any{"replicas": 2, "config": map[string]any{"color": "green", "size": "large"}, "list": []any{1, 2}}
	second := map[string]any{"config": map[string]any{"color": "red"}, "list": []any{3}}
	spec := map[string]any{"replicas": 5, "config": map[string]any{"size": nil}}
	got := MergeValues(first, second, spec)
	want := map[string]any{"replicas": 5, "config": map[string]any{"color": "red", "size": nil}, "list": []any{3}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if first["config"].(map[string]any)["color"] != "green" || second["config"].(map[string]any)["size"] != nil {
		t.Error("MergeValues changed a layer")
	}
	got["config"].(map[string]any)["color"] = "blue"
	if second["config"].(map[string]any)["color"] != "red" {
		t.Error("the result shares a map with a layer")
	}

	// Reversed, the other layer wins.
	if got := MergeValues(spec, second, first); got["replicas"] != 2 || got["config"].(map[string]any)["size"] != "large" {
		t.Errorf("reversed: %v", got)
	}

	// Rendered: spec.values over valuesFrom over the chart's values.yaml.
	archive := packageChart(t, "app", nil)
	opts := baseOptions()
	opts.Values = MergeValues(map[string]any{"replicas": 7, "config": map[string]any{"color": "red"}}, map[string]any{"config": map[string]any{"color": "black"}})
	objs := objects(t, mustRender(t, archive, opts).Manifests)
	if got := field(t, objs["Deployment/web-app"], "spec", "replicas"); got != "7" {
		t.Errorf("replicas %s", got)
	}
	cm := objs["ConfigMap/web-app-config"]
	if field(t, cm, "data", "color") != "black" || field(t, cm, "data", "size") != "small" {
		t.Errorf("config %v", cm.MustString())
	}
}

func TestSetValue(t *testing.T) {
	values := map[string]any{"a": map[string]any{"keep": "x"}}
	for path, value := range map[string]string{
		"a.b":           "plain",
		"a.list[1]":     "second",
		`a.dotted\.key`: "d",
		"password":      `p,a\ss=w{o}rd`,
		"number":        "42",
	} {
		if err := SetValue(values, path, value); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
	want := map[string]any{
		"a":        map[string]any{"keep": "x", "b": "plain", "list": []any{nil, "second"}, "dotted.key": "d"},
		"password": `p,a\ss=w{o}rd`,
		"number":   "42",
	}
	if !reflect.DeepEqual(values, want) {
		t.Errorf("got %#v\nwant %#v", values, want)
	}
	for _, path := range []string{"a[x]", "a..b", "", "big[99999999]"} {
		if err := SetValue(map[string]any{}, path, "x"); err == nil {
			t.Errorf("broken path %q accepted", path)
		}
	}
}
