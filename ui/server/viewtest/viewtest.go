package viewtest

import (
	"context"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"plumb.dev/ui/browsertest"
	"plumb.dev/ui/server"
)

// Token creates the ServiceAccount ns/name bound to a Role of rules in ns
// and returns a real token of it.
func Token(t *testing.T, c client.Client, ns, name string, rules []rbacv1.PolicyRule) string {
	t.Helper()
	ctx := context.Background()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Rules: rules}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}}}
	for _, o := range []client.Object{sa, role, binding} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}
	if err := c.SubResource("token").Create(ctx, sa, tr); err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

// SignIn signs in with token on the sign-in page of the UI at base and
// waits for the overview.
func SignIn(b *browsertest.Browser, base, token string) {
	b.Go(base+"/#/", "#token")
	b.Type("#token", token)
	b.Key("\r")
	b.WaitVisible(".overview-list")
}

// Start runs the UI server with opts until the test ends (listening on
// 127.0.0.1) and returns its address without the trailing slash.
func Start(t *testing.T, opts server.Options) (*server.Server, string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	opts.Listen = "127.0.0.1:0"
	ui, err := server.New(ctx, opts)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- ui.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return ui, strings.TrimSuffix(ui.URL(), "/")
}
