package diff

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	kustomizev1 "plumb.dev/api/kustomize/v1"
)

func TestKeepLive(t *testing.T) {
	g := NewWithT(t)
	ig, err := NewIgnorer([]kustomizev1.IgnoreRule{{
		Paths:  []string{"/spec/replicas", "/spec/template/spec/containers/0/image", "/metadata/annotations/owner", "/spec/paused"},
		Target: &kustomizev1.Selector{Kind: "Deployment"},
	}})
	g.Expect(err).NotTo(HaveOccurred())
	deployment := func(replicas int64, image string, annotations map[string]any) *unstructured.Unstructured {
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": "web", "namespace": "a"},
			"spec": map[string]any{
				"replicas": replicas,
				"paused":   true,
				"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "app", "image": image}}}},
			},
		}}
		if annotations != nil {
			obj.SetAnnotations(map[string]string{})
			_ = unstructured.SetNestedMap(obj.Object, annotations, "metadata", "annotations")
		}
		return obj
	}
	desired := deployment(1, "app:2", map[string]any{"owner": "git"})
	live := deployment(3, "app:1", nil)
	unstructured.RemoveNestedField(live.Object, "spec", "paused")

	ig.KeepLive(desired, live)
	replicas, _, _ := unstructured.NestedInt64(desired.Object, "spec", "replicas")
	g.Expect(replicas).To(Equal(int64(3)), "a live value replaces the desired one")
	containers, _, _ := unstructured.NestedSlice(desired.Object, "spec", "template", "spec", "containers")
	g.Expect(containers[0].(map[string]any)["image"]).To(Equal("app:1"), "list elements by index")
	_, found, _ := unstructured.NestedBool(desired.Object, "spec", "paused")
	g.Expect(found).To(BeFalse(), "a field live lacks is left out")
	g.Expect(desired.GetAnnotations()).NotTo(HaveKey("owner"))

	// The copy is deep: changing live afterwards does not reach desired.
	liveContainers, _, _ := unstructured.NestedSlice(live.Object, "spec", "template", "spec", "containers")
	liveContainers[0].(map[string]any)["image"] = "changed"
	containers, _, _ = unstructured.NestedSlice(desired.Object, "spec", "template", "spec", "containers")
	g.Expect(containers[0].(map[string]any)["image"]).To(Equal("app:1"))

	var none *Ignorer
	none.KeepLive(desired, live) // no rules, no change, no panic
}
