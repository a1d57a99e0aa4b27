package controller

import (
	"context"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	"helm.sh/helm/v4/pkg/release/common"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	helmv2 "plumb.dev/api/helm/v2"
	"plumb.dev/api/meta"
	"plumb.dev/sync-controller/internal/helmstorage"
)

// allowSecrets gives the ServiceAccount sa of ns every right on Secrets
// in storage, and waits until the authorizer counts it.
func allowSecrets(t *testing.T, ctx context.Context, ns, sa, storage string) {
	t.Helper()
	g := NewWithT(t)
	name := sa + "-secrets"
	g.Expect(env.Client.Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: storage},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"},
			Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}}},
	})).To(Succeed())
	g.Expect(env.Client.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: storage},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: ns}},
	})).To(Succeed())
	g.Eventually(func() bool {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:               "system:serviceaccount:" + ns + ":" + sa,
			Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: storage, Verb: "create", Resource: "secrets"},
		}}
		return env.Client.Create(ctx, sar) == nil && sar.Status.Allowed
	}, 30*time.Second, 100*time.Millisecond).Should(BeTrue(), "the RoleBinding never took effect")
}

// TestARecordThatCouldNotBeWrittenIsWrittenAtTheNextReconcile: a release
// whose record the ServiceAccount may not write is Ready all the same,
// with StorageFailed=True; once the ServiceAccount may, the next
// reconcile — no new release — writes it and removes the condition.
func TestARecordThatCouldNotBeWrittenIsWrittenAtTheNextReconcile(t *testing.T) {
	g := NewWithT(t)
	ctx, hr := newHelmRelease(t, func(hr *helmv2.HelmRelease) { hr.Spec.ServiceAccountName = "deployer" })
	ns := hr.Namespace
	tenantServiceAccount(t, ctx, ns, "deployer") // ConfigMaps only: no Secret
	events := subscribeKind(t, helmv2.HelmReleaseKind, ns, "app")

	renderChart(t, hr, storageChart("1.0.0"), nil)
	waitReleaseReady(t, hr, "1.0.0")
	g.Eventually(func(g Gomega) {
		c := conditions.Get(getRelease(g, hr), helmv2.StorageFailedCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(c.Reason).To(Equal(helmv2.StorageFailedReason))
		g.Expect(c.Message).To(ContainSubstring(`cannot create resource "secrets"`))
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	g.Expect(records(g, ns, "app")).To(BeEmpty())
	g.Expect(events.withReason(helmv2.StorageFailedReason)).NotTo(BeEmpty())
	got := getRelease(g, hr)
	g.Expect(conditions.IsReady(got)).To(BeTrue(), "the release is what runs, recorded or not")
	g.Expect(releases(got)).To(Equal([]string{"1:1.0.0:deployed"}))

	allowSecrets(t, ctx, ns, "deployer", ns)
	requestRelease(t, hr)
	g.Eventually(func(g Gomega) {
		got := getRelease(g, hr)
		g.Expect(conditions.Get(got, helmv2.StorageFailedCondition)).To(BeNil())
		g.Expect(records(g, ns, "app")).To(Equal([]helmstorage.Entry{{Version: 1, Status: common.StatusDeployed}}))
		g.Expect(got.Status.StorageNamespace).To(Equal(ns))
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	got = getRelease(g, hr)
	g.Expect(releases(got)).To(Equal([]string{"1:1.0.0:deployed"}), "no new release")
	g.Expect(conditions.Get(got, meta.ReadyCondition).Status).To(Equal(metav1.ConditionTrue))
	rel, err := helmstorage.Storage{Client: env.Client, Namespace: ns, Release: "app"}.Read(ctx, 1)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rel.Info.Description).To(Equal("Install complete"))
	g.Expect(rel.Chart.Metadata.Version).To(Equal("1.0.0"))
}

// TestChangingStorageNamespaceMovesTheRecords: the records follow
// spec.storageNamespace — every revision written into the new namespace
// as it was, then deleted from the old one — and when the move is
// refused at first (the ServiceAccount may not write there yet), the
// records stay where they were, StorageFailed says why, and the next
// reconcile moves them without a new release.
func TestChangingStorageNamespaceMovesTheRecords(t *testing.T) {
	g := NewWithT(t)
	ctx, hr := newHelmRelease(t, func(hr *helmv2.HelmRelease) { hr.Spec.ServiceAccountName = "deployer" })
	ns := hr.Namespace
	tenantServiceAccount(t, ctx, ns, "deployer")
	allowSecrets(t, ctx, ns, "deployer", ns)
	renderChart(t, hr, storageChart("1.0.0"), nil)
	waitReleaseReady(t, hr, "1.0.0")
	renderChart(t, hr, storageChart("2.0.0"), map[string]any{"greeting": "two"})
	waitReleaseReady(t, hr, "2.0.0")
	both := []helmstorage.Entry{{Version: 1, Status: common.StatusSuperseded}, {Version: 2, Status: common.StatusDeployed}}
	g.Eventually(func(g Gomega) []helmstorage.Entry { return records(g, ns, "app") }, 30*time.Second, 100*time.Millisecond).Should(Equal(both),
		"%v", releases(getRelease(g, hr)))

	other, err := env.Namespace(ctx, "storage")
	g.Expect(err).NotTo(HaveOccurred())
	patchRelease(t, hr, func(hr *helmv2.HelmRelease) { hr.Spec.StorageNamespace = other })
	renderChart(t, hr, storageChart("2.0.0"), map[string]any{"greeting": "two"}) // the new generation's render: the same
	g.Eventually(func(g Gomega) {
		got := getRelease(g, hr)
		g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
		c := conditions.Get(got, helmv2.StorageFailedCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Message).To(ContainSubstring("moving the records from namespace " + ns + " to " + other))
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	g.Expect(records(g, ns, "app")).To(Equal(both), "a refused move leaves every record where it was")
	g.Expect(records(g, other, "app")).To(BeEmpty())
	g.Expect(getRelease(g, hr).Status.StorageNamespace).To(Equal(ns))

	allowSecrets(t, ctx, ns, "deployer", other)
	requestRelease(t, hr)
	g.Eventually(func(g Gomega) {
		got := getRelease(g, hr)
		g.Expect(conditions.Get(got, helmv2.StorageFailedCondition)).To(BeNil())
		g.Expect(got.Status.StorageNamespace).To(Equal(other))
		g.Expect(records(g, other, "app")).To(Equal(both))
		g.Expect(records(g, ns, "app")).To(BeEmpty())
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	g.Expect(releases(getRelease(g, hr))).To(Equal([]string{"2:2.0.0:deployed", "1:1.0.0:superseded"}), "no new release")
	rel, err := helmstorage.Storage{Client: env.Client, Namespace: other, Release: "app"}.Read(ctx, 1)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rel.Info.Description).To(Equal("Install complete"))
	g.Expect(rel.Namespace).To(Equal(ns), "the release namespace is unchanged")

	// The HelmRelease's deletion deletes them where they now are.
	g.Expect(env.Client.Delete(ctx, hr)).To(Succeed())
	g.Eventually(func(g Gomega) []helmstorage.Entry { return records(g, other, "app") }, time.Minute, 100*time.Millisecond).Should(BeEmpty())
}
