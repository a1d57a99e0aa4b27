package engine

import (
	"errors"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"plumb.dev/pkg/object"
)

// refused builds the error the API server returns, with its own wording
// (apiserver's responsewriters.forbiddenMessage).
func refused(resource schema.GroupResource, name, reason string) error {
	return apierrors.NewForbidden(resource, name, errors.New(reason))
}

func TestForbiddenNamesTheObjectTheIdentityAndTheVerb(t *testing.T) {
	cm := object.ID{Kind: "ConfigMap", Namespace: "team-b", Name: "x"}
	role := object.ID{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "admin-ish"}
	for _, tc := range []struct {
		name string
		id   object.ID
		err  error
		want string
	}{
		{
			name: "an apply in another namespace",
			id:   cm,
			err: refused(schema.GroupResource{Resource: "configmaps"}, "x",
				`User "system:serviceaccount:team-a:deployer" cannot patch resource "configmaps" in API group "" in the namespace "team-b"`),
			want: "ConfigMap/team-b/x: forbidden: ServiceAccount team-a/deployer may not patch configmaps in namespace team-b (server-side apply)",
		},
		{
			name: "a cluster-scoped object",
			id:   role,
			err: refused(schema.GroupResource{Group: "rbac.authorization.k8s.io", Resource: "clusterroles"}, "admin-ish",
				`User "system:serviceaccount:team-a:deployer" cannot create resource "clusterroles" in API group "rbac.authorization.k8s.io" at the cluster scope`),
			want: "ClusterRole/admin-ish: forbidden: ServiceAccount team-a/deployer may not create clusterroles.rbac.authorization.k8s.io at cluster scope",
		},
		{
			name: "a user that is not a ServiceAccount",
			id:   cm,
			err: refused(schema.GroupResource{Resource: "configmaps"}, "x",
				`User "jane" cannot delete resource "configmaps" in API group "" in the namespace "team-b": no RBAC policy matched`),
			want: "ConfigMap/team-b/x: forbidden: user jane may not delete configmaps in namespace team-b",
		},
		{
			name: "the controller may not impersonate",
			id:   cm,
			err: refused(schema.GroupResource{Resource: "serviceaccounts"}, "deployer",
				`User "system:serviceaccount:plumb-system:sync-controller" cannot impersonate resource "serviceaccounts" in API group "" in the namespace "team-a"`),
			want: "ConfigMap/team-b/x: ServiceAccount plumb-system/sync-controller may not impersonate ServiceAccount team-a/deployer: grant it the impersonate verb on serviceaccounts",
		},
		{
			name: "the controller may not impersonate, in constrained impersonation's words",
			id:   cm,
			err: refused(schema.GroupResource{Resource: "configmaps"}, "x",
				`User "system:serviceaccount:plumb-system:sync-controller" cannot impersonate-on:serviceaccount:get resource "configmaps" in API group "" in the namespace "team-b"`),
			want: "ConfigMap/team-b/x: ServiceAccount plumb-system/sync-controller may not impersonate the Kustomization's ServiceAccount (refused impersonate-on:serviceaccount:get on configmaps in namespace team-b): grant it the impersonate verb on serviceaccounts",
		},
		{
			name: "a refusal worded otherwise keeps the server's words",
			id:   cm,
			err:  refused(schema.GroupResource{Resource: "configmaps"}, "x", "admission webhook said no"),
			want: `ConfigMap/team-b/x: wrapped: configmaps "x" is forbidden: admission webhook said no`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got := Forbidden(tc.id, fmt.Errorf("wrapped: %w", tc.err))
			g.Expect(got).To(MatchError(tc.want))
			g.Expect(apierrors.IsForbidden(got)).To(BeTrue(), "the API error stays reachable")
		})
	}
}

func TestForbiddenIgnoresOtherErrors(t *testing.T) {
	g := NewWithT(t)
	id := object.ID{Kind: "ConfigMap", Namespace: "a", Name: "x"}
	g.Expect(Forbidden(id, apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, "x"))).To(BeNil())
	g.Expect(Forbidden(id, errors.New("connection refused"))).To(BeNil())
	g.Expect(Forbidden(id, nil)).To(BeNil())
}
