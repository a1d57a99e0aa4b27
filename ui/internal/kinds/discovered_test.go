package kinds

import (
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"plumb.dev/pkg/testenv"
)

var env testenv.Lazy

func TestMain(m *testing.M) {
	code := m.Run()
	env.Stop()
	os.Exit(code)
}

func TestAnyKindIsFoundByItsKindAloneFromDiscovery(t *testing.T) {
	g := NewWithT(t)
	d, err := NewDiscovered(env.Get(t).Config)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(d.Resources("Deployment")).To(ConsistOf(Resource{Group: "apps", Resource: "deployments", Namespaced: true}))
	g.Expect(d.Resources("ConfigMap")).To(ConsistOf(Resource{Resource: "configmaps", Namespaced: true}))
	g.Expect(d.Resources("ClusterRole")).To(ConsistOf(Resource{Group: "rbac.authorization.k8s.io", Resource: "clusterroles"}))
	g.Expect(d.Resources("Kustomization")).To(ContainElement(Resource{Group: "kustomize.plumb.dev", Resource: "kustomizations", Namespaced: true}))

	loaded := d.loaded
	g.Expect(d.Resources("NoSuchKind")).To(BeEmpty())
	g.Expect(d.Resources("AnotherMadeUpKind")).To(BeEmpty())
	g.Expect(d.loaded).To(Equal(loaded), "an unknown kind does not read discovery again within a minute")
	d.now = func() time.Time { return loaded.Add(reloadAfter) }
	g.Expect(d.Resources("NoSuchKind")).To(BeEmpty())
	g.Expect(d.loaded).To(Equal(loaded.Add(reloadAfter)), "after a minute it does (a CRD installed since)")
}
