package inventory

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/object"
)

func TestNewSortsEntries(t *testing.T) {
	g := NewWithT(t)
	inv := New([]*unstructured.Unstructured{
		object.Stub("v1", "Service", "b", "web"),
		object.Stub("apps/v1", "Deployment", "a", "web"),
		object.Stub("v1", "ConfigMap", "a", "web"),
		object.Stub("v1", "Namespace", "", "a"),
	})
	g.Expect(inv.Entries).To(Equal([]kustomizev1.InventoryEntry{
		{Version: "v1", Kind: "ConfigMap", Namespace: "a", Name: "web"},
		{Version: "v1", Kind: "Namespace", Name: "a"},
		{Version: "v1", Kind: "Service", Namespace: "b", Name: "web"},
		{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "a", Name: "web"},
	}))
}

func TestRemoved(t *testing.T) {
	g := NewWithT(t)
	old := New([]*unstructured.Unstructured{
		object.Stub("v1", "ConfigMap", "a", "kept"),
		object.Stub("v1", "ConfigMap", "a", "gone"),
		object.Stub("autoscaling/v1", "HorizontalPodAutoscaler", "a", "moved"),
	})
	removed := Removed(old, []*unstructured.Unstructured{
		object.Stub("v1", "ConfigMap", "a", "kept"),
		object.Stub("autoscaling/v2", "HorizontalPodAutoscaler", "a", "moved"),
	})
	g.Expect(removed).To(HaveLen(1))
	g.Expect(removed[0].GetName()).To(Equal("gone"))
	g.Expect(removed[0].GetKind()).To(Equal("ConfigMap"))
	g.Expect(Removed(nil, nil)).To(BeEmpty())
}

func TestObjectRoundTrip(t *testing.T) {
	g := NewWithT(t)
	o := object.Stub("apps/v1", "Deployment", "a", "web")
	g.Expect(EntryOf(Object(EntryOf(o)))).To(Equal(EntryOf(o)))
	g.Expect(Objects(New([]*unstructured.Unstructured{o}))).To(HaveLen(1))
}
