package controller

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kustomizev1 "plumb.dev/api/kustomize/v1"
)

// An IfNotPresent object that exists, and that the controller's watch
// cache sees (it has an owner label), is still read as the ServiceAccount:
// one that may not read it gets nothing "applied" in its name; one that may
// read it, though not create it, leaves it alone. (A CRD is read as the
// ServiceAccount anyway, by the wait for CRDs to be established; this is
// any other kind.)
func TestIfNotPresentIsReadAsTheServiceAccount(t *testing.T) {
	g := NewWithT(t)
	ctx, ks := newKustomization(t, func(ks *kustomizev1.Kustomization) { ks.Spec.ServiceAccountName = "deployer" })
	tenantA := ks.Namespace
	tenantServiceAccount(t, ctx, tenantA, "deployer")
	tenantB, err := env.Namespace(ctx, "tenant-b")
	g.Expect(err).NotTo(HaveOccurred())

	// Another tenant's ConfigMap, labelled as one of its Kustomization's:
	// the watch cache holds it.
	g.Expect(env.Client.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "shared", Namespace: tenantB,
			Labels: map[string]string{kustomizev1.NameLabel: "other", kustomizev1.NamespaceLabel: tenantB}},
		Data: map[string]string{"key": "tenant-b's"},
	})).To(Succeed())
	seed := fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: shared\n  namespace: %s\n  annotations: {plumb.dev/ssa: IfNotPresent}\ndata:\n  key: tenant-a's\n", tenantB)

	render(t, ks, "main@sha1:i1", seed+"---\n"+configMapIn(tenantA, "own"))
	msg := waitNotReady(t, ks, kustomizev1.SyncFailedReason)
	g.Expect(msg).To(ContainSubstring(fmt.Sprintf(
		"ConfigMap/%s/shared: forbidden: ServiceAccount %s/deployer may not get configmaps in namespace %s", tenantB, tenantA, tenantB)))

	// Read rights in tenant-b, no more.
	g.Expect(env.Client.Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "reader", Namespace: tenantB},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}}},
	})).To(Succeed())
	g.Expect(env.Client.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "reader", Namespace: tenantB},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "reader"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "deployer", Namespace: tenantA}},
	})).To(Succeed())
	g.Eventually(func() bool {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:               "system:serviceaccount:" + tenantA + ":deployer",
			Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + tenantA, "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: tenantB, Verb: "get", Resource: "configmaps"},
		}}
		return env.Client.Create(ctx, sar) == nil && sar.Status.Allowed
	}, 30*time.Second, 100*time.Millisecond).Should(BeTrue(), "the RoleBinding never took effect")

	requestReconcile(t, ks)
	waitReady(t, ks, "main@sha1:i1")
	g.Expect(configMapKey(ctx, tenantB, "shared")).To(Equal("tenant-b's"), "an existing object is not changed")
}
