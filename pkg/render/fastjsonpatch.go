package render

import (
	"encoding/json"
	"sort"
	"strconv"
	"strings"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	"sigs.k8s.io/kustomize/api/filters/patchjson6902"
	"sigs.k8s.io/kustomize/api/resource"
	"sigs.k8s.io/kustomize/kyaml/kio/kioutil"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
	sigsyaml "sigs.k8s.io/yaml"
)

// A JSON 6902 patch on the fast path (docs/design/render-fast-path.md,
// "The overlay: patches"): what kustomize's patch transformer does to each
// object its target selects, with the same JSON patch library on the same
// JSON text, but without the four YAML texts kustomize's filter writes and
// parses around it for every object (the object printed and read back as
// JSON, the patched JSON printed as YAML and parsed into a node): the
// object's JSON is encoded from its decoded value, as canonicalYAML does,
// and the patched JSON is decoded straight into the node go-yaml would
// have parsed.

// json6902Of returns the operations of patch when kustomize's patch
// transformer takes it for a JSON 6902 patch — its Config does when its
// resource factory cannot read the (trimmed) text as objects — decoded as
// kustomize's JSON 6902 filter decodes them (YAML made JSON unless the
// text opens with "["), or false for a strategic-merge patch.
func json6902Of(patch string) (jsonpatch.Patch, bool) {
	text := strings.TrimSpace(patch)
	if text == "" {
		return nil, false
	}
	if _, err := resourceFactory.SliceFromBytes([]byte(text)); err == nil {
		return nil, false
	}
	j := []byte(text)
	if !strings.HasPrefix(text, "[") {
		var err error
		if j, err = sigsyaml.YAMLToJSON(j); err != nil {
			return nil, false
		}
	}
	ops, err := jsonpatch.DecodePatch(j)
	return ops, err == nil
}

// patchJSON6902 is what kustomize's patch transformer does to an object
// its target selected for the JSON 6902 patch text (operations ops):
// record the object's id, patch it (jsonPatched), and write its
// annotations back with the internal ones it had before. It returns false
// on any error (kustomize's transformer ignores one of SetAnnotations;
// the fast path gives up on it).
func patchJSON6902(r *resource.Resource, text string, ops jsonpatch.Patch) bool {
	r.StorePreviousId()
	internal := kioutil.GetInternalAnnotations(&r.RNode)
	if !jsonPatched(r, text, ops) {
		return false
	}
	annotations := r.GetAnnotations()
	for k, v := range internal {
		annotations[k] = v
	}
	return r.SetAnnotations(annotations) == nil
}

// jsonPatched applies ops to r as kustomize's JSON 6902 filter does:
// r's JSON (RNode.MarshalJSON: the node printed as YAML, read back into a
// map, encoded as JSON) patched, the result decoded into a map (numbers
// as float64) and made r's node (RNode.UnmarshalJSON: the map printed as
// YAML and parsed). Here the JSON is encoded from the node's decoded
// value — the map MarshalJSON reads back from the text, unless the node
// prints as something else (printsDifferently) — and the map becomes the
// node go-yaml would have parsed (nodeOfJSON). An object it cannot do so
// (not a mapping, a value JSON cannot hold) goes through kustomize's
// filter itself.
func jsonPatched(r *resource.Resource, text string, ops jsonpatch.Patch) bool {
	n := r.YNode()
	if n == nil || n.Kind != kyaml.MappingNode || printsDifferently(n, false) {
		return kustomizesJSON6902(r, text)
	}
	var value map[string]any
	if err := n.Decode(&value); err != nil {
		return kustomizesJSON6902(r, text)
	}
	j, err := json.Marshal(value)
	if err != nil {
		return kustomizesJSON6902(r, text)
	}
	patched, err := ops.Apply(j)
	if err != nil {
		return false
	}
	var m map[string]any
	if err := json.Unmarshal(patched, &m); err != nil {
		return false
	}
	n, ok := nodeOfJSON(m)
	if !ok {
		// kustomize's own way, from the same patched JSON.
		return r.UnmarshalJSON(patched) == nil
	}
	r.SetYNode(n)
	return true
}

// kustomizesJSON6902 patches r through kustomize's own JSON 6902 filter:
// jsonPatched's way for an object it cannot encode itself.
func kustomizesJSON6902(r *resource.Resource, text string) bool {
	return r.ApplyFilter(patchjson6902.Filter{Patch: strings.TrimSpace(text)}) == nil
}

// nodeOfJSON is the node kustomize's RNode.UnmarshalJSON makes of v, a
// value encoding/json decoded: go-yaml prints it (keys sorted, a float64
// in its shortest 'g' form, a string quoted where it would read as
// something else) and its parser reads the text back, tagging each
// scalar by what it reads as. Kinds, tags and values are the parser's;
// line and column, and a string's quoting style, which nothing after it
// reads (a node is printed by its tag: canonicalYAML), are not kept. The
// string "<<", which go-yaml prints bare and reads back as a merge key,
// is false: the caller takes kustomize's way.
// TestNodeOfJSONIsWhatUnmarshalJSONParses holds it to UnmarshalJSON.
func nodeOfJSON(v any) (*kyaml.Node, bool) {
	switch x := v.(type) {
	case map[string]any:
		n := &kyaml.Node{Kind: kyaml.MappingNode, Tag: kyaml.NodeTagMap}
		if len(x) == 0 {
			n.Style = kyaml.FlowStyle
			return n, true
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			if k == mergeKey {
				return nil, false
			}
			keys = append(keys, k)
		}
		sort.Strings(keys)
		n.Content = make([]*kyaml.Node, 0, 2*len(keys))
		for _, k := range keys {
			value, ok := nodeOfJSON(x[k])
			if !ok {
				return nil, false
			}
			n.Content = append(n.Content, &kyaml.Node{Kind: kyaml.ScalarNode, Tag: kyaml.NodeTagString, Value: k}, value)
		}
		return n, true
	case []any:
		n := &kyaml.Node{Kind: kyaml.SequenceNode, Tag: kyaml.NodeTagSeq}
		if len(x) == 0 {
			n.Style = kyaml.FlowStyle
			return n, true
		}
		n.Content = make([]*kyaml.Node, len(x))
		for i, e := range x {
			var ok bool
			if n.Content[i], ok = nodeOfJSON(e); !ok {
				return nil, false
			}
		}
		return n, true
	case string:
		if x == mergeKey {
			return nil, false
		}
		return &kyaml.Node{Kind: kyaml.ScalarNode, Tag: kyaml.NodeTagString, Value: x}, true
	case bool:
		return &kyaml.Node{Kind: kyaml.ScalarNode, Tag: kyaml.NodeTagBool, Value: strconv.FormatBool(x)}, true
	case float64:
		// go-yaml's encoder prints a float64 so; its parser reads an
		// integer's text as !!int when it fits in 64 bits.
		s := strconv.FormatFloat(x, 'g', -1, 64)
		tag := kyaml.NodeTagFloat
		if _, err := strconv.ParseInt(s, 0, 64); err == nil {
			tag = kyaml.NodeTagInt
		} else if _, err := strconv.ParseUint(s, 0, 64); err == nil {
			tag = kyaml.NodeTagInt
		}
		return &kyaml.Node{Kind: kyaml.ScalarNode, Tag: tag, Value: s}, true
	}
	// nil: encoding/json's null.
	return &kyaml.Node{Kind: kyaml.ScalarNode, Tag: kyaml.NodeTagNull, Value: "null"}, true
}

// mergeKey is YAML's merge key, which go-yaml prints bare.
const mergeKey = "<<"
