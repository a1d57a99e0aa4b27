package diff

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// LastAppliedAnnotation is kubectl's client-side apply record; it holds a
// copy of the whole object (Secret data included) and differs by tool.
const LastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// serverMetadata are the metadata fields the API server sets or rewrites on
// every write; they never say anything about drift.
var serverMetadata = []string{"managedFields", "resourceVersion", "uid", "generation", "creationTimestamp", "selfLink"}

// Normalize returns a deep copy of obj without status, the metadata fields
// the server owns (managedFields, resourceVersion, uid, generation,
// creationTimestamp, selfLink), the last-applied annotation, and labels or
// annotations maps that are empty. obj itself is not changed; nil gives nil.
func Normalize(obj *unstructured.Unstructured) *unstructured.Unstructured {
	if obj == nil {
		return nil
	}
	out := &unstructured.Unstructured{Object: copyMap(obj.Object)}
	delete(out.Object, "status")
	md, ok := out.Object["metadata"].(map[string]any)
	if !ok {
		return out
	}
	for _, f := range serverMetadata {
		delete(md, f)
	}
	if ann, ok := md["annotations"].(map[string]any); ok {
		delete(ann, LastAppliedAnnotation)
	}
	dropEmptyMetadataMaps(md)
	return out
}

// dropEmptyMetadataMaps removes labels and annotations maps that are empty
// or null: the server omits an empty map, a rendered manifest may not.
func dropEmptyMetadataMaps(md map[string]any) {
	for _, k := range []string{"labels", "annotations"} {
		v, ok := md[k]
		if !ok {
			continue
		}
		if m, isMap := v.(map[string]any); v == nil || (isMap && len(m) == 0) {
			delete(md, k)
		}
	}
}

// copyMap deep-copies a JSON-like tree. Unlike runtime.DeepCopyJSONValue it
// does not panic on scalar types outside JSON's (int, int32, …); scalars are
// immutable and shared.
func copyMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = copyValue(v)
	}
	return out
}

func copyValue(v any) any {
	switch c := v.(type) {
	case map[string]any:
		return copyMap(c)
	case []any:
		out := make([]any, len(c))
		for i, e := range c {
			out[i] = copyValue(e)
		}
		return out
	}
	return v
}
