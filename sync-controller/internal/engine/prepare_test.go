package engine

import (
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"plumb.dev/pkg/manage"
)

// countingMapper counts the lookups that reach the mapper behind it.
type countingMapper struct {
	apimeta.RESTMapper
	lookups map[schema.GroupKind]int
}

func (m *countingMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*apimeta.RESTMapping, error) {
	m.lookups[gk]++
	return m.RESTMapper.RESTMapping(gk, versions...)
}

func TestPrepareLooksUpEachKindOnce(t *testing.T) {
	g := NewWithT(t)
	served := apimeta.NewDefaultRESTMapper(nil)
	configMap := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	deployment := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	clusterRole := schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"}
	served.Add(configMap, apimeta.RESTScopeNamespace)
	served.Add(deployment, apimeta.RESTScopeNamespace)
	served.Add(clusterRole, apimeta.RESTScopeRoot)
	mapper := &countingMapper{RESTMapper: served, lookups: map[schema.GroupKind]int{}}
	e := New(nil, mapper, nil, 1)

	var objs []*unstructured.Unstructured
	for i := range 100 {
		o := &unstructured.Unstructured{}
		o.SetGroupVersionKind([]schema.GroupVersionKind{configMap, deployment}[i%2])
		o.SetName(fmt.Sprintf("o-%d", i))
		if i%4 == 0 {
			o.SetNamespace("elsewhere")
		}
		objs = append(objs, o)
	}
	role := &unstructured.Unstructured{}
	role.SetGroupVersionKind(clusterRole)
	role.SetName("reader")
	role.SetNamespace("apps") // cluster-scoped: dropped
	objs = append(objs, role)

	hashes, err := e.Prepare(objs, Options{Owner: manage.Owner{Namespace: "apps", Name: "app"}, DefaultNamespace: "apps"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(hashes).To(HaveLen(101))
	g.Expect(mapper.lookups).To(Equal(map[schema.GroupKind]int{
		configMap.GroupKind(): 1, deployment.GroupKind(): 1, clusterRole.GroupKind(): 1,
	}))
	g.Expect(objs[0].GetNamespace()).To(Equal("elsewhere"))
	g.Expect(objs[1].GetNamespace()).To(Equal("apps"))
	g.Expect(role.GetNamespace()).To(BeEmpty())

	// A kind not served is not kept: each object of it asks again, and
	// the next Prepare finds it once it is served.
	widget := schema.GroupVersionKind{Group: "example.dev", Version: "v1", Kind: "Widget"}
	widgets := []*unstructured.Unstructured{{}, {}}
	for i, w := range widgets {
		w.SetGroupVersionKind(widget)
		w.SetName(fmt.Sprintf("w-%d", i))
	}
	_, err = e.Prepare(widgets, Options{DefaultNamespace: "apps"})
	g.Expect(err).To(MatchError(ContainSubstring("is not served by the API server")))
	prepared := &preparedMappings{RESTMapper: mapper, mappings: map[mappingKey]*apimeta.RESTMapping{}}
	for range 2 {
		_, err := prepared.RESTMapping(widget.GroupKind(), widget.Version)
		g.Expect(apimeta.IsNoMatchError(err)).To(BeTrue(), "%v", err)
	}
	g.Expect(mapper.lookups[widget.GroupKind()]).To(Equal(3))
	served.Add(widget, apimeta.RESTScopeNamespace)
	_, err = e.Prepare(widgets, Options{DefaultNamespace: "apps"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(widgets[1].GetNamespace()).To(Equal("apps"))
	g.Expect(mapper.lookups[widget.GroupKind()]).To(Equal(4))
}
