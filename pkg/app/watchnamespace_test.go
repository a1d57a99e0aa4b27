package app_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/app"
	"plumb.dev/pkg/options"
	"plumb.dev/pkg/testenv"
)

// With --watch-all-namespaces=false the cache of the controller's own kind
// holds the objects of $RUNTIME_NAMESPACE only; other kinds stay whole.
func TestWatchingOneNamespaceCachesOnlyItsObjectsOfTheOwnKinds(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	own, err := env.Namespace(ctx, "watched")
	g.Expect(err).NotTo(HaveOccurred())
	other, err := env.Namespace(ctx, "unwatched")
	g.Expect(err).NotTo(HaveOccurred())
	t.Setenv(app.RuntimeNamespaceEnv, own)

	mgr, err := app.NewManager("one-namespace", env.Config, env.Scheme, options.Manager{
		MetricsAddr: "0", HealthAddr: "0", Concurrent: 1, OnlyRuntimeNamespace: true,
	}, &sourcev1.GitRepository{})
	g.Expect(err).NotTo(HaveOccurred())
	testenv.StartManager(t, mgr)

	for _, ns := range []string{own, other} {
		g.Expect(env.Client.Create(ctx, gitRepository(ns, "repo", nil))).To(Succeed())
	}
	c := mgr.GetClient()
	g.Eventually(func() error {
		return c.Get(ctx, types.NamespacedName{Namespace: own, Name: "repo"}, &sourcev1.GitRepository{})
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	// A read outside the namespace is refused by the cache (it holds no
	// informer there), not answered "not found": either way the object
	// is not seen, but it must not be because of another API error.
	err = c.Get(ctx, types.NamespacedName{Namespace: other, Name: "repo"}, &sourcev1.GitRepository{})
	g.Expect(err).To(HaveOccurred())
	g.Expect(apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err)).To(BeFalse(), "%v", err)
	var repos sourcev1.GitRepositoryList
	g.Expect(c.List(ctx, &repos)).To(Succeed())
	for _, r := range repos.Items {
		g.Expect(r.Namespace).To(Equal(own), "the cache holds %s/%s", r.Namespace, r.Name)
	}
	// Another kind is cached in every namespace.
	chart := &sourcev1.HelmRepository{}
	chart.Namespace, chart.Name = other, "charts"
	chart.Spec.URL = "https://charts.example.com"
	chart.Spec.Interval.Duration = time.Hour
	g.Expect(env.Client.Create(ctx, chart)).To(Succeed())
	g.Eventually(func() error {
		return c.Get(ctx, types.NamespacedName{Namespace: other, Name: "charts"}, &sourcev1.HelmRepository{})
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
}

func TestWatchingOneNamespaceNeedsTheRuntimeNamespaceAndOwnKinds(t *testing.T) {
	g := NewWithT(t)
	opts := options.Manager{MetricsAddr: "0", HealthAddr: "0", Concurrent: 1, OnlyRuntimeNamespace: true}
	t.Setenv(app.RuntimeNamespaceEnv, "")
	_, err := app.NewManager("no-namespace", env.Config, env.Scheme, opts, &sourcev1.GitRepository{})
	g.Expect(err).To(MatchError(ContainSubstring("--watch-all-namespaces=false watches $RUNTIME_NAMESPACE, which is not set")))
	t.Setenv(app.RuntimeNamespaceEnv, "plumb-system")
	_, err = app.NewManager("no-kinds", env.Config, env.Scheme, opts)
	g.Expect(err).To(MatchError(ContainSubstring("--watch-all-namespaces=false is given but the controller names no kinds")))
}
