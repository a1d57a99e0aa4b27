package kinds

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestAKindIsFoundByItsRouteNameOrItsKindInAnyCase(t *testing.T) {
	g := NewWithT(t)
	for _, name := range []string{"kustomization", "Kustomization", "KUSTOMIZATION"} {
		k, ok := Lookup(name)
		g.Expect(ok).To(BeTrue(), name)
		g.Expect(k.Resource).To(Equal("kustomizations"))
		g.Expect(k.Group()).To(Equal("kustomize.plumb.dev"))
		g.Expect(k.New().GetObjectKind()).NotTo(BeNil())
	}
	_, ok := Lookup("alert")
	g.Expect(ok).To(BeFalse(), "the overview's kinds only")
	k, ok := LookupAny("Alert")
	g.Expect(ok).To(BeTrue())
	g.Expect(k.Resource).To(Equal("alerts"))
	_, ok = LookupAny("ConfigMap")
	g.Expect(ok).To(BeFalse())
}

func TestImageControllersKindsAreTheOverviewsToo(t *testing.T) {
	g := NewWithT(t)
	for route, resource := range map[string]string{"imagerepository": "imagerepositories", "imagepolicy": "imagepolicies", "imageupdateautomation": "imageupdateautomations"} {
		k, ok := Lookup(route)
		g.Expect(ok).To(BeTrue(), route)
		g.Expect(k.Resource).To(Equal(resource))
		g.Expect(k.Group()).To(Equal("image.plumb.dev"))
	}
}
