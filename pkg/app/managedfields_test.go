package app_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"

	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/app"
	"plumb.dev/pkg/options"
	"plumb.dev/pkg/testenv"
)

// The manager's cache keeps objects without their managedFields, the
// largest part of a small object's metadata; the API server keeps them, and
// an update of a cached object sent back through the manager's client
// leaves them as they were, since a write without managedFields keeps the
// stored ones.
func TestTheCacheKeepsNoManagedFieldsAndAnUpdateKeepsTheStoredOnes(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, err := env.Namespace(ctx, "managedfields")
	g.Expect(err).NotTo(HaveOccurred())
	// With a selector the own kinds have cache options of their own
	// (ByObject): they are stripped too.
	for _, selector := range []string{"", "!sharding.plumb.dev/key"} {
		mgr, err := app.NewManager("managedfields", env.Config, env.Scheme, options.Manager{
			MetricsAddr: "0", HealthAddr: "0", Concurrent: 1, WatchLabelSelector: selector,
		}, &sourcev1.GitRepository{})
		g.Expect(err).NotTo(HaveOccurred())
		testenv.StartManager(t, mgr)

		name := "repo-plain"
		if selector != "" {
			name = "repo-selected"
		}
		g.Expect(env.Client.Create(ctx, gitRepository(ns, name, nil))).To(Succeed())
		key := types.NamespacedName{Namespace: ns, Name: name}
		stored := &sourcev1.GitRepository{}
		g.Expect(mgr.GetAPIReader().Get(ctx, key, stored)).To(Succeed())
		g.Expect(stored.ManagedFields).NotTo(BeEmpty(), "the API server records the create's manager")

		cached := &sourcev1.GitRepository{}
		g.Eventually(func() error { return mgr.GetClient().Get(ctx, key, cached) }, 30*time.Second, 100*time.Millisecond).Should(Succeed())
		g.Expect(cached.Spec.URL).To(Equal(stored.Spec.URL))
		g.Expect(cached.ManagedFields).To(BeEmpty(), "selector %q", selector)

		cached.Labels = map[string]string{"touched": "yes"}
		g.Expect(mgr.GetClient().Update(ctx, cached)).To(Succeed())
		after := &sourcev1.GitRepository{}
		g.Expect(mgr.GetAPIReader().Get(ctx, key, after)).To(Succeed())
		g.Expect(after.Labels).To(HaveKeyWithValue("touched", "yes"))
		managers := map[string]bool{}
		for _, e := range after.ManagedFields {
			managers[e.Manager] = true
		}
		for _, e := range stored.ManagedFields {
			g.Expect(managers).To(HaveKey(e.Manager), "the create's entry is kept after the update: %v", after.ManagedFields)
		}
	}
}
