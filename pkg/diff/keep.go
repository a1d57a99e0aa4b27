package diff

import (
	"sort"
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// KeepLive sets, in desired, every field that a rule selecting desired
// ignores to its value in live, or removes it from desired when live lacks
// it. Applying desired then leaves those fields as the cluster has them:
// not reverted, and — unlike leaving them out — not dropped from the
// applier's field ownership. A missing parent in desired means desired does
// not declare that part, so there is nothing to keep.
//
// A field is looked up in live where it is in desired: a JSON pointer at
// the same place; a field a jq expression yields on desired in the list
// element of live with the same name (containers, env, ports, volumes),
// else at the same index; a field manager's field by its own path, which
// names list elements by their keys.
func (ig *Ignorer) KeepLive(desired, live *unstructured.Unstructured) {
	if ig == nil || desired == nil || live == nil {
		return
	}
	for _, f := range ig.keptFields(desired, live) {
		p := f.desired
		var value any
		found := f.live != nil
		if found {
			value, found = valueAt(live.Object, f.live)
		}
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

// keptField is one ignored field of desired and where live has it (nil:
// live has no such list element).
type keptField struct {
	desired, live Pointer
}

// keptFields pairs every field the rules selecting desired ignore in
// desired with its place in live, deepest and last first (as fieldsIn).
func (ig *Ignorer) keptFields(desired, live *unstructured.Unstructured) []keptField {
	var out []keptField
	var jqDoc any // desired in gojq's types, made once when a rule needs it
	for _, r := range ig.rules {
		if !r.target.matches(desired) {
			continue
		}
		for _, p := range r.pointers {
			out = append(out, keptField{p, p})
		}
		if len(r.jq) > 0 && jqDoc == nil {
			jqDoc = jqValue(desired.Object)
		}
		for _, jq := range r.jq {
			ps, _ := jq.pointers(jqDoc)
			for _, p := range ps {
				lp, _ := sameElementPointer(desired.Object, live.Object, p)
				out = append(out, keptField{p, lp})
			}
		}
		for _, path := range managedPaths(live, r.managers) {
			dp, ok := pointerIn(desired.Object, path)
			if !ok {
				continue
			}
			lp, _ := pointerIn(live.Object, path)
			out = append(out, keptField{dp, lp})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return comparePointers(out[i].desired, out[j].desired) > 0 })
	return out
}

// sameElementPointer follows p through desired and returns the pointer
// to the same field in live, choosing in each list the element whose
// "name" is the one desired has there (the key of most Kubernetes lists),
// or the same index when the element has no name. False when live has no
// such element.
func sameElementPointer(desired, live map[string]any, p Pointer) (Pointer, bool) {
	out := make(Pointer, 0, len(p))
	var d, l any = desired, live
	for _, tok := range p {
		switch dn := d.(type) {
		case map[string]any:
			lm, ok := l.(map[string]any)
			if !ok {
				return nil, false
			}
			d, l = dn[tok], lm[tok]
			out = append(out, tok)
		case []any:
			ll, ok := l.([]any)
			i, okIdx := arrayIndex(tok, len(dn))
			if !ok || !okIdx {
				return nil, false
			}
			j := namedIndex(dn[i], ll)
			if j < 0 {
				if _, named := elementName(dn[i]); named || i >= len(ll) {
					return nil, false
				}
				j = i
			}
			d, l = dn[i], ll[j]
			out = append(out, strconv.Itoa(j))
		default:
			return nil, false
		}
	}
	return out, true
}

// namedIndex is the index in list of the element with elem's name, -1 if
// elem has no name or list has no element of that name.
func namedIndex(elem any, list []any) int {
	name, ok := elementName(elem)
	if !ok {
		return -1
	}
	for i, e := range list {
		if n, ok := elementName(e); ok && n == name {
			return i
		}
	}
	return -1
}

func elementName(v any) (string, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		return "", false
	}
	name, ok := m["name"].(string)
	return name, ok
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
