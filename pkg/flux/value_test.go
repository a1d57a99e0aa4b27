package flux

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestValueReadsUnstructuredAsItsAccessorsDo: the in-place read of an
// unstructured object's labels and annotations finds what GetLabels and
// GetAnnotations would, malformed metadata included.
func TestValueReadsUnstructuredAsItsAccessorsDo(t *testing.T) {
	g := NewWithT(t)
	for name, metadata := range map[string]any{
		"strings":            map[string]any{"annotations": map[string]any{SSAKey: "Ignore", "b": "x"}, "labels": map[string]any{SSAKey: "merge"}},
		"a null value":       map[string]any{"annotations": map[string]any{SSAKey: nil}, "labels": map[string]any{SSAKey: "Ignore", "b": nil}},
		"a number sibling":   map[string]any{"annotations": map[string]any{SSAKey: "Ignore", "b": float64(1)}, "labels": map[string]any{SSAKey: "Ignore"}},
		"a number value":     map[string]any{"annotations": map[string]any{SSAKey: true}},
		"annotations a list": map[string]any{"annotations": []any{SSAKey}, "labels": map[string]any{SSAKey: "Merge"}},
		"metadata a string":  "x",
		"no metadata":        nil,
	} {
		u := &unstructured.Unstructured{Object: map[string]any{"metadata": metadata}}
		for _, label := range []bool{false, true} {
			want := u.GetAnnotations()[SSAKey]
			if label {
				want = u.GetLabels()[SSAKey]
			}
			g.Expect(value(u, label, SSAKey)).To(Equal(want), "%s, label %t", name, label)
		}
	}
	g.Expect(Has(&unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{
		"labels": map[string]any{SSAKey: "ignore"},
	}}}, SSAKey, Ignore)).To(BeTrue())
}
