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

// A trim cuts what the cache keeps of its kind, after the managedFields,
// and an own kind's selector still applies to the trimmed kind; another
// kind is only stripped. Two trims of one kind are refused.
func TestATrimCutsItsKindInTheCache(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, err := env.Namespace(ctx, "trim")
	g.Expect(err).NotTo(HaveOccurred())
	// The URL goes only from an object already stripped: a cached URL
	// says the order is wrong.
	dropURL := func(in any) (any, error) {
		if repo, ok := in.(*sourcev1.GitRepository); ok && len(repo.ManagedFields) == 0 {
			repo.Spec.URL = ""
		}
		return in, nil
	}
	trims := []app.Trim{{Object: &sourcev1.GitRepository{}, Transform: dropURL}}
	_, err = app.NewTrimmingManager("trim", env.Config, env.Scheme, options.Manager{MetricsAddr: "0", HealthAddr: "0", Concurrent: 1},
		append(trims, trims[0]))
	g.Expect(err).To(MatchError(ContainSubstring("two cache trims")))

	for _, selector := range []string{"", "!sharding.plumb.dev/key"} {
		mgr, err := app.NewTrimmingManager("trim", env.Config, env.Scheme, options.Manager{
			MetricsAddr: "0", HealthAddr: "0", Concurrent: 1, WatchLabelSelector: selector,
		}, trims, &sourcev1.GitRepository{})
		g.Expect(err).NotTo(HaveOccurred())
		testenv.StartManager(t, mgr)

		name, other := "repo-plain", "repo-plain-other-shard"
		if selector != "" {
			name, other = "repo-selected", "repo-selected-other-shard"
		}
		g.Expect(env.Client.Create(ctx, gitRepository(ns, name, nil))).To(Succeed())
		g.Expect(env.Client.Create(ctx, gitRepository(ns, other, map[string]string{"sharding.plumb.dev/key": "a"}))).To(Succeed())
		cached := &sourcev1.GitRepository{}
		g.Eventually(func() error {
			return mgr.GetClient().Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, cached)
		}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
		g.Expect(cached.Spec.URL).To(BeEmpty(), "selector %q", selector)
		g.Expect(cached.Spec.Interval.Duration).To(Equal(time.Hour))
		g.Expect(cached.ManagedFields).To(BeEmpty())

		list := &sourcev1.GitRepositoryList{}
		g.Expect(mgr.GetClient().List(ctx, list)).To(Succeed())
		var names []string
		for _, r := range list.Items {
			if r.Namespace == ns {
				names = append(names, r.Name)
			}
		}
		if selector != "" {
			g.Expect(names).To(ConsistOf("repo-plain", "repo-selected"), "the selector still applies: the other shard's are not cached")
		} else {
			g.Expect(names).To(ContainElements("repo-plain", "repo-plain-other-shard"))
		}
	}
}
