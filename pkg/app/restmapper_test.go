package app_test

import (
	"context"
	"fmt"
	"net/http"
	goruntime "runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/app"
	"plumb.dev/pkg/options"
)

var crdSerial atomic.Int32

// crdClient is a client that reads and writes CustomResourceDefinitions.
func crdClient(t *testing.T) client.Client {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// widgetCRD is a CRD of the kind Widget in group, served at version with
// scope.
func widgetCRD(group, version string, scope apiextensionsv1.ResourceScope) *apiextensionsv1.CustomResourceDefinition {
	preserve := true
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group, Scope: scope,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: version, Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: &preserve}},
			}},
		},
	}
}

// installWidgets creates widgetCRD(group, version, scope), deleted when the
// test ends.
func installWidgets(t *testing.T, c client.Client, group, version string, scope apiextensionsv1.ResourceScope) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	crd := widgetCRD(group, version, scope)
	if err := c.Create(context.Background(), crd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), crd) })
	return crd
}

// newWidgetGroup returns a group no other test uses.
func newWidgetGroup() string {
	return fmt.Sprintf("kept%d-%d.mapper.test.plumb.dev", time.Now().UnixNano()%1_000_000, crdSerial.Add(1))
}

// managerMapper is the REST mapper of a manager NewManager made, as every
// controller has it, having looked up the controllers' own kinds once.
func managerMapper(t *testing.T) meta.RESTMapper {
	t.Helper()
	mgr, err := app.NewManager("mapper-test", env.Config, env.Scheme, options.Manager{MetricsAddr: "0", HealthAddr: "0", Concurrent: 1})
	if err != nil {
		t.Fatal(err)
	}
	m := mgr.GetRESTMapper()
	if _, err := m.RESTMapping(kustomizev1.GroupVersion.WithKind(kustomizev1.KustomizationKind).GroupKind(), kustomizev1.GroupVersion.Version); err != nil {
		t.Fatal(err)
	}
	return m
}

// eventuallyMapped waits until m maps gk at version (the API server serves
// a new CRD's kind a moment after its create) and returns the mapping.
func eventuallyMapped(g *WithT, m meta.RESTMapper, gk schema.GroupKind, version string) *meta.RESTMapping {
	var found *meta.RESTMapping
	g.Eventually(func() (err error) {
		found, err = m.RESTMapping(gk, version)
		return err
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	return found
}

func TestTheManagersMapperKeepsWhatItFound(t *testing.T) {
	g := NewWithT(t)
	m := managerMapper(t)
	gk := schema.GroupKind{Group: kustomizev1.GroupVersion.Group, Kind: kustomizev1.KustomizationKind}
	first, err := m.RESTMapping(gk, kustomizev1.GroupVersion.Version)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(first.Resource).To(Equal(kustomizev1.GroupVersion.WithResource("kustomizations")))
	g.Expect(first.Scope.Name()).To(Equal(meta.RESTScopeNameNamespace))
	again, err := m.RESTMapping(gk, kustomizev1.GroupVersion.Version)
	g.Expect(err).NotTo(HaveOccurred())
	// controller-runtime's mapper makes a new mapping on every lookup; a
	// kept one is the same.
	g.Expect(again).To(BeIdenticalTo(first))

	// A lookup of a kept kind allocates nothing (the lazy mapper's, one
	// error per API group it knows and more).
	versions := []string{kustomizev1.GroupVersion.Version}
	kept := testing.AllocsPerRun(100, func() { _, _ = m.RESTMapping(gk, versions...) })
	httpClient, err := rest.HTTPClientFor(env.Config)
	g.Expect(err).NotTo(HaveOccurred())
	lazy, err := apiutil.NewDynamicRESTMapper(env.Config, httpClient)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = lazy.RESTMapping(gk, versions...)
	g.Expect(err).NotTo(HaveOccurred())
	walked := testing.AllocsPerRun(100, func() { _, _ = lazy.RESTMapping(gk, versions...) })
	t.Logf("allocations per lookup: %.0f kept, %.0f by controller-runtime's mapper", kept, walked)
	g.Expect(kept).To(BeZero())
}

func TestAKindWhoseCRDIsCreatedAfterStartIsFound(t *testing.T) {
	g := NewWithT(t)
	m := managerMapper(t)
	group := newWidgetGroup()
	gk := schema.GroupKind{Group: group, Kind: "Widget"}

	_, err := m.RESTMapping(gk, "v1")
	g.Expect(meta.IsNoMatchError(err)).To(BeTrue(), "before its CRD: %v", err)

	installWidgets(t, crdClient(t), group, "v1", apiextensionsv1.NamespaceScoped)
	found := eventuallyMapped(g, m, gk, "v1")
	g.Expect(found.Resource).To(Equal(schema.GroupVersionResource{Group: group, Version: "v1", Resource: "widgets"}))
	g.Expect(found.Scope.Name()).To(Equal(meta.RESTScopeNameNamespace))
	// Without a version, the one the API server prefers.
	unversioned, err := m.RESTMapping(gk)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(unversioned.GroupVersionKind).To(Equal(gk.WithVersion("v1")))
}

func TestAKindWhoseCRDIsMadeAgainWithAnotherVersionIsFoundAtIt(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	m := managerMapper(t)
	group := newWidgetGroup()
	gk := schema.GroupKind{Group: group, Kind: "Widget"}
	c := crdClient(t)

	v1 := installWidgets(t, c, group, "v1", apiextensionsv1.NamespaceScoped)
	eventuallyMapped(g, m, gk, "v1")
	kept, err := m.RESTMapping(gk, "v1")
	g.Expect(err).NotTo(HaveOccurred())
	again, err := m.RESTMapping(gk, "v1")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again).To(BeIdenticalTo(kept), "the v1 mapping is kept")

	// The CRD is deleted and made again, served at v2 only and
	// cluster-scoped.
	g.Expect(c.Delete(ctx, v1)).To(Succeed())
	g.Eventually(func() error {
		err := c.Get(ctx, client.ObjectKeyFromObject(v1), &apiextensionsv1.CustomResourceDefinition{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		return fmt.Errorf("the CRD is still there")
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	installWidgets(t, c, group, "v2", apiextensionsv1.ClusterScoped)
	found := eventuallyMapped(g, m, gk, "v2")
	g.Expect(found.Resource).To(Equal(schema.GroupVersionResource{Group: group, Version: "v2", Resource: "widgets"}))
	g.Expect(found.Scope.Name()).To(Equal(meta.RESTScopeNameRoot))
	// Found in a lookup that sent discovery requests, so kept from the
	// next one on.
	kept, err = m.RESTMapping(gk, "v2")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(kept.Resource).To(Equal(found.Resource))
	again, err = m.RESTMapping(gk, "v2")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again).To(BeIdenticalTo(kept), "the v2 mapping is kept")
}

func TestMappingsFoundByConcurrentLookupsAreKept(t *testing.T) {
	g := NewWithT(t)
	m := managerMapper(t)
	kinds := []schema.GroupVersionKind{
		{Version: "v1", Kind: "ConfigMap"}, {Version: "v1", Kind: "Secret"},
		{Version: "v1", Kind: "Service"}, {Version: "v1", Kind: "ServiceAccount"},
		kustomizev1.GroupVersion.WithKind(kustomizev1.KustomizationKind),
	}
	versions := make([][]string, len(kinds))
	for i, gvk := range kinds {
		versions[i] = []string{gvk.Version}
	}
	// As a controller's workers do: many lookups at once, from the start.
	lookUp := func() {
		var wg sync.WaitGroup
		for range 16 {
			wg.Go(func() {
				for range 50 {
					for i, gvk := range kinds {
						if _, err := m.RESTMapping(gvk.GroupKind(), versions[i]...); err != nil {
							t.Error(err)
						}
					}
				}
			})
		}
		wg.Wait()
	}
	lookUp()
	// Once found, the next round is answered from what was kept, however
	// many lookups run at once: a round of controller-runtime's walks
	// would allocate about a hundred times per lookup.
	var before, after goruntime.MemStats
	goruntime.ReadMemStats(&before)
	lookUp()
	goruntime.ReadMemStats(&after)
	perLookup := float64(after.Mallocs-before.Mallocs) / float64(16*50*len(kinds))
	t.Logf("allocations per concurrent lookup: %.2f", perLookup)
	g.Expect(perLookup).To(BeNumerically("<", 1))
}

// BenchmarkRESTMapping looks up a kind the mapper has, as every status
// write and object apply of a controller does.
func BenchmarkRESTMapping(b *testing.B) {
	gk := schema.GroupKind{Group: kustomizev1.GroupVersion.Group, Kind: kustomizev1.KustomizationKind}
	httpClient, err := rest.HTTPClientFor(env.Config)
	if err != nil {
		b.Fatal(err)
	}
	for _, m := range []struct {
		name string
		make func(*rest.Config, *http.Client) (meta.RESTMapper, error)
	}{{"controller-runtime", apiutil.NewDynamicRESTMapper}, {"kept", app.NewRESTMapper}} {
		b.Run(m.name, func(b *testing.B) {
			mapper, err := m.make(env.Config, httpClient)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := mapper.RESTMapping(gk, kustomizev1.GroupVersion.Version); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := mapper.RESTMapping(gk, kustomizev1.GroupVersion.Version); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
