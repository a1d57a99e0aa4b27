package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	setv1 "plumb.dev/api/set/v1"
	"plumb.dev/pkg/testenv"
	"plumb.dev/ui/server"
)

// objectSet creates, in ns, the set "fleet" of two list elements whose
// status says dev gave the Kustomization app-dev and the ConfigMap
// values-dev and prod the Kustomization app-prod, and of those objects
// only app-dev (Ready) and values-dev, labelled as the set's.
func objectSet(t *testing.T, ns string) *setv1.ObjectSet {
	t.Helper()
	ctx := context.Background()
	set := &setv1.ObjectSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fleet"},
		Spec: setv1.ObjectSetSpec{Interval: metav1.Duration{Duration: time.Hour}, Template: "{}",
			Generators: []setv1.Generator{{List: &setv1.ListGenerator{Elements: []apiextensionsv1.JSON{
				{Raw: []byte(`{"env":"dev"}`)}, {Raw: []byte(`{"env":"prod"}`)}}}}}}}
	labels := map[string]string{setv1.NameLabel: "fleet", setv1.NamespaceLabel: ns}
	dev := kustomization(ns, "app-dev", "fleet")
	dev.Labels = labels
	values := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "values-dev", Labels: labels},
		Data: map[string]string{"secretish": "not for the page"}}
	create(t, set, dev, values)
	now := metav1.Now()
	testenv.SetStatus(ctx, t, env.Client, dev, func(k *kustomizev1.Kustomization) {
		k.Status.Conditions = []metav1.Condition{{Type: meta.ReadyCondition, Status: metav1.ConditionTrue,
			Reason: meta.SucceededReason, Message: "applied", LastTransitionTime: now}}
	})
	testenv.SetStatus(ctx, t, env.Client, set, func(s *setv1.ObjectSet) {
		s.Status.Conditions = []metav1.Condition{{Type: meta.ReadyCondition, Status: metav1.ConditionTrue,
			Reason: meta.SucceededReason, Message: "applied 3 objects for 2 elements", LastTransitionTime: now}}
		s.Status.Elements = 2
		s.Status.ElementDetails = []setv1.ElementStatus{
			{Values: `{"env":"dev"}`, Objects: []string{"Kustomization/" + ns + "/app-dev", "ConfigMap/" + ns + "/values-dev"}},
			{Values: `{"env":"prod"}`, Objects: []string{"Kustomization/" + ns + "/app-prod"}},
		}
	})
	return set
}

type setPage struct {
	Kind  string `json:"kind"`
	Ready string `json:"ready"`
	Set   *struct {
		Generators []string `json:"generators"`
		Elements   int      `json:"elements"`
		Items      []struct {
			Values  string              `json:"values"`
			Objects []map[string]string `json:"objects"`
		} `json:"items"`
		Note string `json:"note"`
	} `json:"set"`
}

// An ObjectSet's page: its generators summed up, each element with the
// objects it gave and their Ready state, read as the user: a kind the
// user may not list is said so per object, an object the set's labelled
// objects lack is Missing, and a user who may not get the set is refused.
// The overview lists the set.
func TestAnObjectSetsPageShowsItsElementsAndTheirObjectsAsTheUserMayRead(t *testing.T) {
	g := NewWithT(t)
	ns := namespace(t, "set")
	objectSet(t, ns)
	viewer, _ := serviceAccountToken(t, ns, "viewer")
	grantRules(t, ns, ns, "viewer", "ui-viewer", []rbacv1.PolicyRule{
		{APIGroups: []string{setv1.GroupVersion.Group}, Resources: []string{"objectsets"}, Verbs: []string{"get", "list"}},
		{APIGroups: []string{kustomizev1.GroupVersion.Group}, Resources: []string{"kustomizations"}, Verbs: []string{"list"}},
	})
	stranger, _ := serviceAccountToken(t, ns, "stranger")
	grant(t, ns, ns, "stranger", "get", "list")

	srv := start(t, server.AuthToken, true)
	b := newBrowser(t, srv)
	b.signIn(map[string]string{"token": viewer})
	status, data, _ := b.do(http.MethodGet, "/api/objects/objectset/"+ns+"/fleet", nil)
	g.Expect(status).To(Equal(http.StatusOK), string(data))
	var page setPage
	g.Expect(json.Unmarshal(data, &page)).To(Succeed())
	g.Expect(page.Kind).To(Equal("ObjectSet"))
	g.Expect(page.Ready).To(Equal("True"))
	g.Expect(page.Set).NotTo(BeNil(), string(data))
	g.Expect(page.Set.Generators).To(Equal([]string{"list of 2 elements"}))
	g.Expect(page.Set.Elements).To(Equal(2))
	g.Expect(page.Set.Items).To(HaveLen(2))
	g.Expect(page.Set.Items[0].Values).To(Equal(`{"env":"dev"}`))
	g.Expect(page.Set.Items[0].Objects).To(HaveLen(2))
	g.Expect(page.Set.Items[0].Objects[0]).To(And(HaveKeyWithValue("kind", "Kustomization"), HaveKeyWithValue("name", "app-dev"),
		HaveKeyWithValue("route", "kustomization"), HaveKeyWithValue("ready", "True"), HaveKeyWithValue("reason", meta.SucceededReason)))
	g.Expect(page.Set.Items[0].Objects[1]).To(And(HaveKeyWithValue("kind", "ConfigMap"), HaveKeyWithValue("name", "values-dev"),
		HaveKey("error"), Not(HaveKey("ready")), Not(HaveKey("route"))), "the viewer may not list ConfigMaps")
	g.Expect(page.Set.Items[1].Objects).To(ConsistOf(And(HaveKeyWithValue("name", "app-prod"), HaveKeyWithValue("ready", "Missing"))))
	g.Expect(page.Set.Note).To(ContainSubstring("ConfigMaps not read: "))
	g.Expect(string(data)).NotTo(ContainSubstring("not for the page"))

	// A user who may read the set's Kustomizations but not the set.
	b = newBrowser(t, srv)
	b.signIn(map[string]string{"token": stranger})
	status, data, _ = b.do(http.MethodGet, "/api/objects/objectset/"+ns+"/fleet", nil)
	g.Expect(status).To(Equal(http.StatusForbidden), string(data))
	g.Expect(string(data)).NotTo(ContainSubstring("app-dev"))

	// The administrator sees the ConfigMap exists, and the set in the overview.
	admin := start(t, server.AuthKubeconfig, false)
	b = newBrowser(t, admin)
	b.signIn(map[string]string{"secret": admin.LoginSecret()})
	status, data, _ = b.do(http.MethodGet, "/api/objects/objectset/"+ns+"/fleet", nil)
	g.Expect(status).To(Equal(http.StatusOK), string(data))
	page = setPage{}
	g.Expect(json.Unmarshal(data, &page)).To(Succeed())
	g.Expect(page.Set.Items[0].Objects[1]).To(HaveKeyWithValue("ready", "Exists"))
	g.Expect(page.Set.Note).To(BeEmpty())
	g.Eventually(func(g Gomega) {
		var rows overviewPage
		status, data, _ := b.do(http.MethodGet, "/api/overview?kind=objectset&namespace="+ns, nil)
		g.Expect(status).To(Equal(http.StatusOK), string(data))
		g.Expect(json.Unmarshal(data, &rows)).To(Succeed())
		g.Expect(rows.Total).To(Equal(1))
		g.Expect(rows.Items[0].Kind).To(Equal(setv1.ObjectSetKind))
		g.Expect(rows.Items[0].Ready).To(Equal("True"))
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
}
