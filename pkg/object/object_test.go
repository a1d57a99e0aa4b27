package object

import (
	"sort"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestIDLeavesTheVersionOut(t *testing.T) {
	g := NewWithT(t)
	v1 := IDOf(Stub("autoscaling/v1", "HorizontalPodAutoscaler", "shop", "web"))
	v2 := IDOf(Stub("autoscaling/v2", "HorizontalPodAutoscaler", "shop", "web"))
	g.Expect(v1).To(Equal(v2))
	g.Expect(v1).To(Equal(ID{Group: "autoscaling", Kind: "HorizontalPodAutoscaler", Namespace: "shop", Name: "web"}))
	g.Expect(v1.String()).To(Equal("HorizontalPodAutoscaler/shop/web"))
	g.Expect(v1.GroupKind()).To(Equal(schema.GroupKind{Group: "autoscaling", Kind: "HorizontalPodAutoscaler"}))
	g.Expect(IDOf(Stub("v1", "Namespace", "", "shop")).String()).To(Equal("Namespace/shop"))
}

func TestAListedKindCountsOnlyInItsGroup(t *testing.T) {
	g := NewWithT(t)
	g.Expect(Rank(schema.GroupKind{Kind: "Service"})).To(BeNumerically("<", OtherKinds))
	g.Expect(Rank(schema.GroupKind{Group: "serving.knative.dev", Kind: "Service"})).To(Equal(OtherKinds))
	g.Expect(Rank(schema.GroupKind{Group: "extensions", Kind: "Deployment"})).To(Equal(Rank(schema.GroupKind{Group: "apps", Kind: "Deployment"})))
}

func TestLessIsTheKindOrderThenKindGroupNamespaceName(t *testing.T) {
	g := NewWithT(t)
	ids := []ID{
		{Group: "serving.knative.dev", Kind: "Service", Namespace: "a", Name: "s"},
		{Group: "example.com", Kind: "Widget", Namespace: "a", Name: "x"},
		{Group: "apps", Kind: "Deployment", Namespace: "b", Name: "web"},
		{Group: "apps", Kind: "Deployment", Namespace: "a", Name: "web"},
		{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition", Name: "widgets.example.com"},
		{Kind: "ConfigMap", Namespace: "a", Name: "c"},
		{Kind: "Service", Namespace: "a", Name: "s"},
		{Kind: "Namespace", Name: "a"},
	}
	sort.Slice(ids, func(i, j int) bool { return Less(ids[i], ids[j]) })
	var got []string
	for _, id := range ids {
		got = append(got, id.String())
	}
	g.Expect(got).To(Equal([]string{
		"Namespace/a", "ConfigMap/a/c", "CustomResourceDefinition/widgets.example.com", "Service/a/s",
		"Deployment/a/web", "Deployment/b/web", "Service/a/s", "Widget/a/x",
	}))
	g.Expect(ids[6].Group).To(Equal("serving.knative.dev"), "a custom resource named like a listed kind")
}
