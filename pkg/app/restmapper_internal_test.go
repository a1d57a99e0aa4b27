package app

import (
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// reloading is a lazy mapper whose answers name how many discovery
// requests the kept mapper has counted. A lookup of the kind "Reload"
// sends one, as controller-runtime's mapper does on a miss; with midway,
// every other lookup answers from the state before a discovery that
// starts while it answers (another lookup's reload).
type reloading struct {
	meta.RESTMapper
	k      *keptMappings
	midway bool
}

func (r *reloading) RESTMapping(gk schema.GroupKind, _ ...string) (*meta.RESTMapping, error) {
	if gk.Kind == "Reload" {
		r.k.discoveries.Add(1)
		return nil, &meta.NoKindMatchError{GroupKind: gk}
	}
	version := fmt.Sprintf("v%d", r.k.discoveries.Load())
	if r.midway {
		r.k.discoveries.Add(1)
	}
	return &meta.RESTMapping{
		Resource:         schema.GroupVersionResource{Group: gk.Group, Version: version, Resource: "widgets"},
		GroupVersionKind: gk.WithVersion(version),
		Scope:            meta.RESTScopeNamespace,
	}, nil
}

func keptOver(lazy *reloading) *keptMappings {
	k := &keptMappings{RESTMapper: lazy}
	k.kept.Store(&keptSet{})
	lazy.k = k
	return k
}

var widget = schema.GroupKind{Group: "example.com", Kind: "Widget"}

func TestADiscoveryDropsTheKeptMappings(t *testing.T) {
	g := NewWithT(t)
	k := keptOver(&reloading{})
	first, err := k.RESTMapping(widget)
	g.Expect(err).NotTo(HaveOccurred())
	again, err := k.RESTMapping(widget)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again).To(BeIdenticalTo(first))

	// A kind the lazy mapper does not have: it reloads from discovery,
	// which may change its answer for any kind.
	_, err = k.RESTMapping(schema.GroupKind{Group: "other.example.com", Kind: "Reload"})
	g.Expect(meta.IsNoMatchError(err)).To(BeTrue())
	after, err := k.RESTMapping(widget)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(after.GroupVersionKind.Version).To(Equal("v1"))
}

func TestAMappingFoundWhileTheLazyMapperReloadsIsNotKept(t *testing.T) {
	g := NewWithT(t)
	lazy := &reloading{midway: true}
	k := keptOver(lazy)
	found, err := k.RESTMapping(widget)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(found.GroupVersionKind.Version).To(Equal("v0"), "answered from the state before the reload")

	lazy.midway = false
	after, err := k.RESTMapping(widget)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(after.GroupVersionKind.Version).To(Equal("v1"), "the answer of before the reload was not kept")
	again, err := k.RESTMapping(widget)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again).To(BeIdenticalTo(after))
}
