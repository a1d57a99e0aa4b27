package target

import (
	"context"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/manage"
	"plumb.dev/pkg/testenv"
)

// One client per ServiceAccount, shared by the objects that act as it and
// dropped with the last of them; building one contacts no server.
func TestClientsKeepAClientPerServiceAccountWhileUsed(t *testing.T) {
	g := NewWithT(t)
	c := NewClients(&rest.Config{Host: "https://127.0.0.1:1"}, runtime.NewScheme(), nil)
	ks1 := manage.Owner{Kind: kustomizev1.KustomizationKind, Namespace: "team-a", Name: "one"}
	ks2 := manage.Owner{Kind: kustomizev1.KustomizationKind, Namespace: "team-a", Name: "two"}
	deployer := "system:serviceaccount:team-a:deployer"
	other := "system:serviceaccount:team-a:other"

	c1, err := c.local(ks1, deployer)
	g.Expect(err).NotTo(HaveOccurred())
	c2, err := c.local(ks2, deployer)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c2).To(BeIdenticalTo(c1), "one client per ServiceAccount")
	g.Expect(c.cached()).To(Equal(1))

	// ks1 moves to another ServiceAccount: deployer is still used by ks2.
	_, err = c.local(ks1, other)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c.cached()).To(Equal(2))
	// The last user of deployer goes: its client goes too.
	c.Release(ks2)
	g.Expect(c.cached()).To(Equal(1))
	c.Release(ks1)
	g.Expect(c.cached()).To(Equal(0))
	c.Release(ks1) // releasing twice is harmless
}

// spec.serviceAccountName, else --default-service-account, in the owner's
// namespace, and where the name came from for the messages.
func TestTheServiceAccountIsDecidedOnce(t *testing.T) {
	g := NewWithT(t)
	owner := manage.Owner{Kind: kustomizev1.KustomizationKind, Namespace: "team-a", Name: "app"}
	none := &Resolver{}
	g.Expect(none.serviceAccountOf(Request{Owner: owner}).Named()).To(BeFalse())
	named := none.serviceAccountOf(Request{Owner: owner, ServiceAccountName: "deployer"})
	g.Expect(named.String()).To(Equal("team-a/deployer"))
	g.Expect(named.ByDefault).To(BeFalse())
	g.Expect(named.UserName()).To(Equal("system:serviceaccount:team-a:deployer"))

	withDefault := &Resolver{DefaultServiceAccount: "default"}
	byDefault := withDefault.serviceAccountOf(Request{Owner: owner})
	g.Expect(byDefault.String()).To(Equal("team-a/default"))
	g.Expect(byDefault.ByDefault).To(BeTrue())
	g.Expect(withDefault.serviceAccountOf(Request{Owner: owner, ServiceAccountName: "deployer"})).To(Equal(named))
}

// shared is a control plane for the tests that need an API server to
// decide, started by the first of them.
var shared testenv.Lazy

func TestMain(m *testing.M) {
	code := m.Run()
	shared.Stop()
	os.Exit(code)
}

// A client of the cache acts as its ServiceAccount: the API server allows
// what the ServiceAccount's RoleBinding grants and refuses the rest,
// naming the ServiceAccount's user.
func TestImpersonatedClientActsAsTheServiceAccount(t *testing.T) {
	g := NewWithT(t)
	env := shared.Get(t)
	ctx := context.Background()
	ns, err := env.Namespace(ctx, "tenant")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(env.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "deployer", Namespace: ns}})).To(Succeed())
	g.Expect(env.Client.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "deployer", Namespace: ns},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"create"}}}})).To(Succeed())
	g.Expect(env.Client.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "deployer", Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "deployer"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "deployer", Namespace: ns}}})).To(Succeed())

	owner := manage.Owner{Kind: kustomizev1.KustomizationKind, Namespace: ns, Name: "app"}
	sa := ServiceAccount{NamespacedName: types.NamespacedName{Namespace: ns, Name: "deployer"}}
	c, err := NewClients(env.Config, env.Scheme, nil).local(owner, sa.UserName())
	g.Expect(err).NotTo(HaveOccurred())
	// The RoleBinding takes effect a moment after it is created.
	g.Eventually(func() error {
		return c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "mine", Namespace: ns}})
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	err = c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "not-mine", Namespace: ns}})
	g.Expect(err).To(Satisfy(apierrors.IsForbidden))
	g.Expect(err.Error()).To(ContainSubstring(`User "system:serviceaccount:` + ns + `:deployer" cannot create resource "secrets"`))
}
