package engine

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"plumb.dev/pkg/diff"
)

// copyIgnoredFields sets, in desired, every field that an ignore rule
// selects to its value in live (or removes it from desired when live lacks
// it), so applying desired leaves those fields as the cluster has them.
func copyIgnoredFields(desired, live *unstructured.Unstructured, ig *diff.Ignorer) {
	for _, p := range ig.Pointers(desired) {
		value, found := lookup(live.Object, p)
		if found {
			set(desired.Object, p, value)
		} else {
			p.Remove(desired.Object)
		}
	}
}

// lookup returns the value at pointer p in doc.
func lookup(doc any, p diff.Pointer) (any, bool) {
	cur := doc
	for _, tok := range p {
		switch node := cur.(type) {
		case map[string]any:
			next, ok := node[tok]
			if !ok {
				return nil, false
			}
			cur = next
		case []any:
			i, ok := index(tok, len(node))
			if !ok {
				return nil, false
			}
			cur = node[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// set stores value at pointer p in doc where the parent exists; a missing
// parent means desired does not declare that part, so there is nothing to keep.
func set(doc map[string]any, p diff.Pointer, value any) {
	if len(p) == 0 {
		return
	}
	parent, ok := lookup(doc, p[:len(p)-1])
	if !ok {
		return
	}
	last := p[len(p)-1]
	switch node := parent.(type) {
	case map[string]any:
		node[last] = deepCopyJSON(value)
	case []any:
		if i, ok := index(last, len(node)); ok {
			node[i] = deepCopyJSON(value)
		}
	}
}

func index(tok string, n int) (int, bool) {
	i := 0
	if tok == "" {
		return 0, false
	}
	for _, c := range tok {
		if c < '0' || c > '9' {
			return 0, false
		}
		i = i*10 + int(c-'0')
		if i >= n {
			return 0, false
		}
	}
	return i, true
}

// deepCopyJSON copies a JSON value so desired never aliases live.
func deepCopyJSON(v any) any { return runtime.DeepCopyJSONValue(v) }
