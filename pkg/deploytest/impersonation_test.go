package deploytest

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// tokenFor returns a client that authenticates as the controller's
// ServiceAccount with a real token (TokenRequest), not by impersonation:
// impersonation does not chain, so this is the only way to check that the
// ServiceAccount itself may impersonate.
func tokenFor(ctx context.Context, t *testing.T, sa string, impersonate string) client.Client {
	t.Helper()
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)}}
	account := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: namespace}}
	if err := env.Client.SubResource("token").Create(ctx, account, tr); err != nil {
		t.Fatalf("TokenRequest for %s: %v", sa, err)
	}
	cfg := rest.AnonymousClientConfig(env.Config)
	cfg.BearerToken = tr.Status.Token
	cfg.Impersonate = rest.ImpersonationConfig{UserName: impersonate}
	// The administrator's REST mapper: discovery as a refused identity
	// would fail before the request under test.
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme, Mapper: env.Client.RESTMapper()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestSyncControllerImpersonatesATenantServiceAccount: sync-controller's
// own ServiceAccount, with the RBAC of deploy/, may act as a tenant's
// ServiceAccount (spec.serviceAccountName), and then has exactly that
// ServiceAccount's rights; another controller may not impersonate.
func TestSyncControllerImpersonatesATenantServiceAccount(t *testing.T) {
	install(t)
	g := NewWithT(t)
	ctx := context.Background()
	tenant, err := env.Namespace(ctx, "tenant")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(env.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "deployer", Namespace: tenant}})).To(Succeed())
	g.Expect(env.Client.Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "deployer", Namespace: tenant},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "create", "patch", "delete"}}},
	})).To(Succeed())
	g.Expect(env.Client.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "deployer", Namespace: tenant},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "deployer"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "deployer", Namespace: tenant}},
	})).To(Succeed())
	user := "system:serviceaccount:" + tenant + ":deployer"

	asTenant := tokenFor(ctx, t, "sync-controller", user)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: tenant}}
	// The authorizer learns of the new RoleBinding from a watch.
	g.Eventually(func() error { return asTenant.Create(ctx, cm.DeepCopy()) }, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	err = asTenant.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "default"}})
	g.Expect(err).To(Satisfy(apierrors.IsForbidden), "the tenant's ServiceAccount has no rights outside its namespace")
	g.Expect(err.Error()).To(ContainSubstring(`User "` + user + `" cannot create resource "configmaps"`))

	for _, other := range []string{"source-controller", "render-controller", "notification-controller"} {
		err := tokenFor(ctx, t, other, user).Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{})
		g.Expect(err).To(Satisfy(apierrors.IsForbidden), other)
		// "cannot impersonate resource serviceaccounts", or with constrained
		// impersonation (Kubernetes 1.34+) "cannot impersonate-on:…".
		g.Expect(err.Error()).To(ContainSubstring(`User "system:serviceaccount:`+namespace+`:`+other+`" cannot impersonate`), other)
	}
}
