package diff

import (
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// managedPaths returns the fields that the named field managers own in
// the live object, as structured-merge-diff paths (what the API server
// records in metadata.managedFields): a list element appears by its key
// (k:{"name":"web"}) or value, so the same path finds the same element in
// the object from Git even when the lists are in another order.
func managedPaths(live *unstructured.Unstructured, managers map[string]bool) []fieldpath.Path {
	if live == nil || len(managers) == 0 {
		return nil
	}
	var out []fieldpath.Path
	for _, e := range live.GetManagedFields() {
		if !managers[e.Manager] || e.FieldsV1 == nil {
			continue
		}
		out = append(out, fieldsOf(e)...)
	}
	return out
}

func fieldsOf(e metav1.ManagedFieldsEntry) []fieldpath.Path {
	set := &fieldpath.Set{}
	if err := set.FromJSON(e.FieldsV1.GetRawReader()); err != nil {
		// The API server writes these; one it could not have written
		// ignores nothing.
		return nil
	}
	var out []fieldpath.Path
	set.Iterate(func(p fieldpath.Path) { out = append(out, p.Copy()) })
	return out
}

// pointerIn finds the field p names in doc and returns its pointer, or
// false when doc does not have it.
func pointerIn(doc map[string]any, p fieldpath.Path) (Pointer, bool) {
	out := make(Pointer, 0, len(p))
	var cur any = doc
	for _, pe := range p {
		switch {
		case pe.FieldName != nil:
			m, ok := cur.(map[string]any)
			if !ok {
				return nil, false
			}
			next, ok := m[*pe.FieldName]
			if !ok {
				return nil, false
			}
			out, cur = append(out, *pe.FieldName), next
		default:
			list, ok := cur.([]any)
			if !ok {
				return nil, false
			}
			i := elementIndex(list, pe)
			if i < 0 {
				return nil, false
			}
			out, cur = append(out, strconv.Itoa(i)), list[i]
		}
	}
	return out, true
}

// elementIndex is the index of the list element pe selects, -1 for none.
func elementIndex(list []any, pe fieldpath.PathElement) int {
	switch {
	case pe.Index != nil:
		if *pe.Index >= 0 && *pe.Index < len(list) {
			return *pe.Index
		}
	case pe.Value != nil:
		want := jsonText((*pe.Value).Unstructured())
		for i, e := range list {
			if jsonText(e) == want {
				return i
			}
		}
	case pe.Key != nil:
		for i, e := range list {
			m, ok := e.(map[string]any)
			if ok && hasKey(m, *pe.Key) {
				return i
			}
		}
	}
	return -1
}

func hasKey(m map[string]any, key value.FieldList) bool {
	for _, f := range key {
		v, ok := m[f.Name]
		if !ok || jsonText(v) != jsonText(f.Value.Unstructured()) {
			return false
		}
	}
	return true
}
