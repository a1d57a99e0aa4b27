package inventory

import (
	"encoding/json"
	"testing"

	"github.com/fluxcd/cli-utils/pkg/object"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	plumbobject "plumb.dev/pkg/object"
)

// fluxInventory is what Flux's tools decode status.inventory into
// (kustomize-controller's ResourceInventory): entries of id and v.
type fluxInventory struct {
	Entries []struct {
		ID      string `json:"id"`
		Version string `json:"v"`
	} `json:"entries"`
}

// Flux's own code reads an inventory Plumb writes: each id, parsed with
// the parser flux tree and flux diff kustomization use, names the object
// the entry was made from, and is the id Flux's writer makes of it.
func TestFluxsParserReadsTheInventory(t *testing.T) {
	g := NewWithT(t)
	objs := []*unstructured.Unstructured{
		plumbobject.Stub("v1", "ConfigMap", "apps", "web"),
		plumbobject.Stub("apps/v1", "Deployment", "apps", "web"),
		plumbobject.Stub("v1", "Namespace", "", "apps"),
		plumbobject.Stub("rbac.authorization.k8s.io/v1", "ClusterRole", "", "system:web:view"),
		plumbobject.Stub("rbac.authorization.k8s.io/v1", "RoleBinding", "apps", "a_b"),
		plumbobject.Stub("kustomize.plumb.dev/v1", "Kustomization", "flux-system", "apps"),
	}
	data, err := json.Marshal(New(objs))
	g.Expect(err).NotTo(HaveOccurred())
	var inv fluxInventory
	g.Expect(json.Unmarshal(data, &inv)).To(Succeed())

	var got, want []object.ObjMetadata
	for _, e := range inv.Entries {
		m, err := object.ParseObjMetadata(e.ID)
		g.Expect(err).NotTo(HaveOccurred(), e.ID)
		g.Expect(m.String()).To(Equal(e.ID), "Flux's writer makes the same id")
		got = append(got, m)
		gv, err := schema.ParseGroupVersion(stubOf(objs, m).GetAPIVersion())
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(e.Version).To(Equal(gv.Version), e.ID)
	}
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		want = append(want, object.ObjMetadata{Namespace: o.GetNamespace(), Name: o.GetName(), GroupKind: gvk.GroupKind()})
	}
	g.Expect(got).To(ConsistOf(want))
}

// stubOf returns the object of objs that m names.
func stubOf(objs []*unstructured.Unstructured, m object.ObjMetadata) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetNamespace() == m.Namespace && o.GetName() == m.Name && o.GroupVersionKind().GroupKind() == m.GroupKind {
			return o
		}
	}
	return &unstructured.Unstructured{}
}
