package diff

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// KeepLive sets, in desired, every field that a rule selecting desired
// ignores to its value in live, or removes it from desired when live lacks
// it. Applying desired then leaves those fields as the cluster has them:
// not reverted, and — unlike leaving them out — not dropped from the
// applier's field ownership. A missing parent in desired means desired does
// not declare that part, so there is nothing to keep.
func (ig *Ignorer) KeepLive(desired, live *unstructured.Unstructured) {
	if ig == nil || desired == nil || live == nil {
		return
	}
	for _, p := range ig.Pointers(desired) {
		value, found := valueAt(live.Object, p)
		if !found {
			p.Remove(desired.Object)
			continue
		}
		if len(p) == 0 {
			continue
		}
		parent, ok := valueAt(desired.Object, p[:len(p)-1])
		if !ok {
			continue
		}
		last := p[len(p)-1]
		switch node := parent.(type) {
		case map[string]any:
			node[last] = runtime.DeepCopyJSONValue(value)
		case []any:
			if i, ok := arrayIndex(last, len(node)); ok {
				node[i] = runtime.DeepCopyJSONValue(value)
			}
		}
	}
}

// valueAt returns the value at pointer p in doc and whether it is there
// (a JSON null is there).
func valueAt(doc any, p Pointer) (any, bool) {
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
			i, ok := arrayIndex(tok, len(node))
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
