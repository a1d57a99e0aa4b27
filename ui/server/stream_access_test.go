package server_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"plumb.dev/pkg/app"
	"plumb.dev/ui/internal/access"
	"plumb.dev/ui/server"
)

// fixed is an access.Access of one session.
type fixed struct{ s *access.Session }

func (f fixed) From(*http.Request) *access.Session { return f.s }

func TestADriftChangesObjectIsCheckedByItsKindInItsGroupWithTheUsersRights(t *testing.T) {
	g := NewWithT(t)
	mine, theirs := namespace(t, "applied"), namespace(t, "applied-other")
	token, _ := serviceAccountToken(t, mine, "dev")
	grantRules(t, mine, mine, "dev", "ui-deployments", []rbacv1.PolicyRule{
		{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get"}},
	})
	check := streamAccessOf(g, token)
	r := httptest.NewRequest(http.MethodGet, "/api/drift", nil)

	g.Expect(check.MayGetApplied(r, "Deployment", mine, "web")).To(BeTrue(), "apps/deployments, allowed in its namespace")
	g.Expect(check.MayGetApplied(r, "Deployment", theirs, "web")).To(BeFalse(), "another namespace")
	g.Expect(check.MayGetApplied(r, "ConfigMap", mine, "web")).To(BeFalse(), "another resource")
	g.Expect(check.MayGetApplied(r, "Deployment", "", "web")).To(BeFalse(), "a namespaced kind named as cluster-scoped")
	g.Expect(check.MayGetApplied(r, "ClusterRole", "", "admin")).To(BeFalse())
	g.Expect(check.MayGetApplied(r, "NoSuchKind", mine, "web")).To(BeFalse(), "a kind the API server does not serve")
}

// streamAccessOf is the stream part's Authorizer for a session of the
// ServiceAccount token.
func streamAccessOf(g Gomega, token string) server.AppliedChecker {
	cfg := rest.AnonymousClientConfig(env.Config)
	cfg.BearerToken = token
	hc, err := rest.HTTPClientFor(env.Config)
	g.Expect(err).NotTo(HaveOccurred())
	mapper, err := apiutil.NewDynamicRESTMapper(env.Config, hc)
	g.Expect(err).NotTo(HaveOccurred())
	s, err := access.NewSession(cfg, app.NewScheme(), mapper, access.ModeToken, "dev", nil)
	g.Expect(err).NotTo(HaveOccurred())
	check, err := server.NewStreamAccess(fixed{s}, env.Config)
	g.Expect(err).NotTo(HaveOccurred())
	return check
}
