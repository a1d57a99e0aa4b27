package server_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/ui/server"
)

// A source's page lists the Kustomizations and HelmReleases built from
// it, as the user lists them: a user who may list only the source's
// namespace sees those there, and the page says the list stops there.
func TestASourcesPageListsWhatUsesItAsTheUserMayList(t *testing.T) {
	g := NewWithT(t)
	ns := namespace(t, "oci")
	hour := metav1.Duration{Duration: time.Hour}
	repo := &sourcev1.OCIRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "manifests"},
		Spec: sourcev1.OCIRepositorySpec{URL: "oci://registry.test/org/manifests", Interval: hour}}
	ks := kustomization(ns, "web", "manifests")
	ks.Spec.SourceRef.Kind = sourcev1.OCIRepositoryKind
	byGit := kustomization(ns, "other", "manifests")
	hr := &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "chart"},
		Spec: helmv2.HelmReleaseSpec{Interval: hour, ChartRef: &helmv2.CrossNamespaceSourceReference{Kind: sourcev1.OCIRepositoryKind, Name: "manifests"}}}
	create(t, repo, ks, byGit, hr)
	token, _ := serviceAccountToken(t, ns, "dev")
	grantRules(t, ns, ns, "dev", "ui-dev", []rbacv1.PolicyRule{
		{APIGroups: []string{sourcev1.GroupVersion.Group}, Resources: []string{"ocirepositories"}, Verbs: []string{"get"}},
		{APIGroups: []string{kustomizev1.GroupVersion.Group}, Resources: []string{"kustomizations"}, Verbs: []string{"list"}},
	})
	srv := start(t, server.AuthToken, true)
	b := newBrowser(t, srv)
	b.signIn(map[string]string{"token": token})

	status, data, _ := b.do(http.MethodGet, "/api/objects/ocirepository/"+ns+"/manifests", nil)
	g.Expect(status).To(Equal(http.StatusOK), string(data))
	var page struct {
		UsedBy     []map[string]string `json:"usedBy"`
		UsedByNote string              `json:"usedByNote"`
	}
	g.Expect(json.Unmarshal(data, &page)).To(Succeed())
	g.Expect(page.UsedBy).To(Equal([]map[string]string{{"kind": "Kustomization", "namespace": ns, "name": "web", "ready": "Unknown"}}),
		"the Kustomization of the OCIRepository, not the GitRepository's")
	g.Expect(page.UsedByNote).To(ContainSubstring("only Kustomizations in " + ns + " (you may not list them in every namespace)"))
	g.Expect(page.UsedByNote).To(ContainSubstring("HelmReleases not read: "), "a kind the user may not list is named, not guessed")
}
