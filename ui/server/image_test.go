package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	imagev1 "plumb.dev/api/image/v1"
	"plumb.dev/api/meta"
	"plumb.dev/ui/server"
)

func imagePolicy(ns, name string) *imagev1.ImagePolicy {
	return &imagev1.ImagePolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: imagev1.ImagePolicySpec{ImageRepositoryRef: meta.NamespacedObjectReference{Name: name},
			Policy: imagev1.ImagePolicyChoice{SemVer: &imagev1.SemVerPolicy{Range: "^1.0"}}}}
}

// The overview lists ImagePolicies with their latest image, from the
// server's watch, to a user who may list them in the namespace only; the
// policy's page is read as the user (403 elsewhere).
func TestTheOverviewShowsAPolicysLatestImageToWhoMayListIt(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	mine, theirs := namespace(t, "img"), namespace(t, "img-other")
	token, _ := serviceAccountToken(t, mine, "dev")
	grantRules(t, mine, mine, "dev", "ui-images", []rbacv1.PolicyRule{
		{APIGroups: []string{imagev1.GroupVersion.Group}, Resources: []string{"imagepolicies", "imagerepositories", "imageupdateautomations"}, Verbs: []string{"get", "list", "watch", "patch"}},
	})
	pol := imagePolicy(mine, "web")
	create(t, pol, imagePolicy(theirs, "web"))
	pol.Status.LatestRef = &imagev1.ImageRef{Name: "registry.test/web", Tag: "1.4.2"}
	pol.Status.Conditions = []metav1.Condition{{Type: meta.ReadyCondition, Status: metav1.ConditionTrue, Reason: meta.SucceededReason,
		Message: "latest image tag for registry.test/web resolved to 1.4.2", LastTransitionTime: metav1.Now()}}
	g.Expect(env.Client.Status().Update(ctx, pol)).To(Succeed())

	srv := start(t, server.AuthToken, true)
	b := newBrowser(t, srv)
	b.signIn(map[string]string{"token": token})

	type row struct {
		Kind, Namespace, Name, Ready, Revision string
	}
	var page struct {
		Total int   `json:"total"`
		Items []row `json:"items"`
	}
	g.Eventually(func(g Gomega) {
		status, data, _ := b.do(http.MethodGet, "/api/overview?kind=imagepolicy", nil)
		g.Expect(status).To(Equal(http.StatusOK), string(data))
		g.Expect(json.Unmarshal(data, &page)).To(Succeed())
		g.Expect(page.Items).To(ConsistOf(row{Kind: imagev1.ImagePolicyKind, Namespace: mine, Name: "web", Ready: "True", Revision: "registry.test/web:1.4.2"}))
	}, 30*time.Second, 200*time.Millisecond).Should(Succeed())
	status, data, _ := b.do(http.MethodGet, "/api/overview?q=1.4.2", nil)
	g.Expect(status).To(Equal(http.StatusOK))
	g.Expect(json.Unmarshal(data, &page)).To(Succeed())
	g.Expect(page.Total).To(Equal(1), "a search for the tag finds the policy")

	status, data, _ = b.do(http.MethodGet, "/api/objects/imagepolicy/"+mine+"/web", nil)
	g.Expect(status).To(Equal(http.StatusOK), string(data))
	var obj struct {
		Image struct {
			Latest imagev1.ImageRef `json:"latest"`
		} `json:"image"`
	}
	g.Expect(json.Unmarshal(data, &obj)).To(Succeed())
	g.Expect(obj.Image.Latest.Tag).To(Equal("1.4.2"))
	status, data, _ = b.do(http.MethodGet, "/api/objects/imagepolicy/"+theirs+"/web", nil)
	g.Expect(status).To(Equal(http.StatusForbidden), string(data))

	// Suspend from the page is the user's patch of spec.suspend.
	status, data, _ = b.do(http.MethodPost, "/api/objects/imagepolicy/"+mine+"/web/suspend", map[string]any{})
	g.Expect(status).To(Equal(http.StatusOK), string(data))
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(pol), pol)).To(Succeed())
	g.Expect(pol.Spec.Suspend).To(BeTrue())
	status, data, _ = b.do(http.MethodPost, "/api/objects/imagepolicy/"+theirs+"/web/suspend", map[string]any{})
	g.Expect(status).To(Equal(http.StatusForbidden), string(data))
}

// An automation's events (its commits) are shown to a user who may get
// automations in its namespace, and to no one else.
func TestAnAutomationsEventsAreCheckedAsItsKindWithTheUsersRights(t *testing.T) {
	g := NewWithT(t)
	mine, theirs := namespace(t, "img-events"), namespace(t, "img-events-other")
	token, _ := serviceAccountToken(t, mine, "dev")
	grantRules(t, mine, mine, "dev", "ui-automations", []rbacv1.PolicyRule{
		{APIGroups: []string{imagev1.GroupVersion.Group}, Resources: []string{"imageupdateautomations"}, Verbs: []string{"get"}},
	})
	check := streamAccessOf(g, token)
	r := httptest.NewRequest(http.MethodGet, "/api/events", nil)

	g.Expect(check.MayGet(r, imagev1.ImageUpdateAutomationKind, mine, "bot")).To(BeTrue())
	g.Expect(check.MayGet(r, imagev1.ImageUpdateAutomationKind, theirs, "bot")).To(BeFalse(), "another namespace")
	g.Expect(check.MayGet(r, imagev1.ImagePolicyKind, mine, "web")).To(BeFalse(), "another kind")
}
