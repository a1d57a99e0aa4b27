package cmd

import (
	"testing"

	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// kubectl's connection flags work as kubectl's: --as impersonates a user,
// whose rights the API server then applies (a ServiceAccount that may read
// GitRepositories in one namespace lists them there and is refused in
// another), and -n picks the namespace.
func TestKubectlFlagsImpersonateAndScope(t *testing.T) {
	ctx, ns := newNamespace(t)
	_, other := newNamespace(t)
	g := NewWithT(t)
	create(ctx, t, gitRepo(ns, "app"), gitRepo(other, "theirs"))
	create(ctx, t,
		&rbacv1.Role{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "read-sources"},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"source.plumb.dev"}, Resources: []string{"gitrepositories"}, Verbs: []string{"get", "list"}}},
		},
		&rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "read-sources"},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "read-sources"},
			Subjects:   []rbacv1.Subject{{Kind: "User", Name: "reader"}},
		})

	as := plumb("get", "gitrepositories", "-n", ns, "--as", "reader")
	g.Expect(as.code).To(Equal(ExitOK), as.String())
	g.Expect(as.out).To(ContainSubstring("app"))

	refused := plumb("get", "gitrepositories", "-n", other, "--as", "reader")
	g.Expect(refused.code).To(Equal(ExitError), refused.String())
	g.Expect(refused.errOut).To(ContainSubstring(`"reader" cannot list resource "gitrepositories"`))

	admin := plumb("get", "gitrepositories", "-n", other)
	g.Expect(admin.code).To(Equal(ExitOK), admin.String())
	g.Expect(admin.out).To(ContainSubstring("theirs"))

	// --context names a context of the kubeconfig; an unknown one is an
	// error before any request.
	missing := plumb("get", "gitrepositories", "--context", "nowhere")
	g.Expect(missing.code).To(Equal(ExitError), missing.String())
	g.Expect(missing.errOut).To(ContainSubstring(`context "nowhere"`))
}
