package inspect

import (
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gstruct"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	imagev1 "plumb.dev/api/image/v1"
	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
)

// imageObjects are a repository, a policy of it labelled app=web, and
// three automations of the namespace: one selecting app=web, one with no
// selector (which selects every policy), one selecting app=other.
func imageObjects(ns string) (*imagev1.ImageRepository, *imagev1.ImagePolicy, []*imagev1.ImageUpdateAutomation) {
	hour := metav1.Duration{Duration: time.Hour}
	repo := &imagev1.ImageRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: imagev1.ImageRepositorySpec{Image: "registry.test/web", Interval: hour}}
	pol := &imagev1.ImagePolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web", Labels: map[string]string{"app": "web"}},
		Spec: imagev1.ImagePolicySpec{ImageRepositoryRef: meta.NamespacedObjectReference{Name: "web"},
			Policy: imagev1.ImagePolicyChoice{SemVer: &imagev1.SemVerPolicy{Range: "^1.0"}}}}
	auto := func(name string, sel *metav1.LabelSelector) *imagev1.ImageUpdateAutomation {
		return &imagev1.ImageUpdateAutomation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: imagev1.ImageUpdateAutomationSpec{
				SourceRef: imagev1.GitSourceReference{Kind: sourcev1.GitRepositoryKind, Name: "config"}, Interval: hour,
				Git:    imagev1.GitSpec{Commit: imagev1.CommitSpec{Author: imagev1.CommitUser{Name: "Plumb Bot", Email: "bot@example.com"}}},
				Update: &imagev1.UpdateStrategy{Strategy: imagev1.UpdateStrategySetters, Path: "deploy"}, PolicySelector: sel}}
	}
	return repo, pol, []*imagev1.ImageUpdateAutomation{
		auto("by-label", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}),
		auto("everything", nil),
		auto("other", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "other"}}),
	}
}

// A policy's page shows its latest and previous image, the repository it
// came from with its last scan and tag count, and the automations that
// select it; an automation's page its last push and its GitRepository.
func TestImagePagesShowTheLatestImageWhereItCameFromAndTheLastPush(t *testing.T) {
	g := NewWithT(t)
	ctx, ns := newNamespace(t)
	srv := newServer(t)
	repo, pol, autos := imageObjects(ns)
	create(ctx, t, repo, pol, autos[0], autos[1], autos[2])
	scanned := metav1.NewTime(time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC))
	setStatus(ctx, t, repo, func(o *imagev1.ImageRepository) {
		o.Status.CanonicalImageName = "registry.test/web"
		o.Status.LastScanResult = &imagev1.ScanResult{Revision: "sha256:0a1b", TagCount: 7, ScanTime: scanned}
	})
	setStatus(ctx, t, pol, func(o *imagev1.ImagePolicy) {
		o.Status.LatestRef = &imagev1.ImageRef{Name: "registry.test/web", Tag: "1.4.2"}
		o.Status.ObservedPreviousRef = &imagev1.ImageRef{Name: "registry.test/web", Tag: "1.4.1"}
	})
	pushed := metav1.NewTime(time.Date(2026, 12, 6, 12, 1, 0, 0, time.UTC))
	commit := "0123456789abcdef0123456789abcdef01234567"
	setStatus(ctx, t, autos[0], func(o *imagev1.ImageUpdateAutomation) {
		o.Status.LastPushCommit, o.Status.LastPushTime, o.Status.LastAutomationRunTime = commit, &pushed, &pushed
		o.Status.ObservedPolicies = map[string]imagev1.ImageRef{"web": {Name: "registry.test/web", Tag: "1.4.2"}}
	})

	r := do(t, srv, http.MethodGet, "/api/objects/imagepolicy/"+ns+"/web", "", "")
	g.Expect(r.status).To(Equal(http.StatusOK), r.String())
	var page objectPage
	r.decode(t, &page)
	g.Expect(page.Revision).To(Equal("registry.test/web:1.4.2"))
	g.Expect(page.Image).NotTo(BeNil())
	g.Expect(page.Image.Latest).To(HaveValue(HaveField("Tag", "1.4.2")))
	g.Expect(page.Image.Previous).To(HaveValue(HaveField("Tag", "1.4.1")))
	g.Expect(page.Source).NotTo(BeNil())
	g.Expect(*page.Source).To(gstruct.MatchFields(gstruct.IgnoreExtras, gstruct.Fields{
		"Kind": Equal(imagev1.ImageRepositoryKind), "Name": Equal("web"), "Error": BeEmpty(),
		"Image": Equal("registry.test/web"), "TagCount": HaveValue(Equal(7)), "Revision": Equal("sha256:0a1b"),
	}))
	g.Expect(page.Source.LastScan.Time.Equal(scanned.Time)).To(BeTrue())
	g.Expect(page.Image.Automations).To(ConsistOf(
		objectRef{Kind: imagev1.ImageUpdateAutomationKind, Namespace: ns, Name: "by-label"},
		objectRef{Kind: imagev1.ImageUpdateAutomationKind, Namespace: ns, Name: "everything"}))
	g.Expect(page.Image.AutomationsNote).To(BeEmpty())

	r = do(t, srv, http.MethodGet, "/api/objects/imageupdateautomation/"+ns+"/by-label", "", "")
	g.Expect(r.status).To(Equal(http.StatusOK), r.String())
	page = objectPage{}
	r.decode(t, &page)
	g.Expect(page.Image.LastPushCommit).To(Equal(commit))
	g.Expect(page.Image.LastPushTime.Time.Equal(pushed.Time)).To(BeTrue())
	g.Expect(page.Image.Policies).To(HaveKeyWithValue("web", imagev1.ImageRef{Name: "registry.test/web", Tag: "1.4.2"}))
	g.Expect(page.Revision).To(Equal("sha1:" + commit))
	g.Expect(page.Source).NotTo(BeNil())
	g.Expect(page.Source.Kind).To(Equal(sourcev1.GitRepositoryKind))
	g.Expect(page.Source.Error).NotTo(BeEmpty(), "the GitRepository does not exist, and the page says so")

	r = do(t, srv, http.MethodGet, "/api/objects/imagerepository/"+ns+"/web", "", "")
	g.Expect(r.status).To(Equal(http.StatusOK), r.String())
	page = objectPage{}
	r.decode(t, &page)
	g.Expect(page.Revision).To(Equal("sha256:0a1b"))
	g.Expect(page.LastSync).NotTo(BeNil())
}

// The page is the user's: without get on the policy, 403; with get on
// image policies and repositories but not list of automations, the page
// says the automations are not known rather than listing them with more
// rights.
func TestAnImagePolicyPageIsReadWithTheUsersRights(t *testing.T) {
	g := NewWithT(t)
	ctx, ns := newNamespace(t)
	srv := newServer(t)
	repo, pol, autos := imageObjects(ns)
	create(ctx, t, repo, pol, autos[0])

	r := do(t, srv, http.MethodGet, "/api/objects/imagepolicy/"+ns+"/web", "viewer", "")
	g.Expect(r.status).To(Equal(http.StatusForbidden), r.String())

	create(ctx, t,
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "viewer"}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{imagev1.GroupVersion.Group}, Resources: []string{"imagepolicies", "imagerepositories"}, Verbs: []string{"get"}},
		}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "viewer"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "viewer"},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: "viewer"}}})
	g.Eventually(func() int {
		return do(t, srv, http.MethodGet, "/api/objects/imagepolicy/"+ns+"/web", "viewer", "").status
	}, 30*time.Second, 100*time.Millisecond).Should(Equal(http.StatusOK))
	r = do(t, srv, http.MethodGet, "/api/objects/imagepolicy/"+ns+"/web", "viewer", "")
	var page objectPage
	r.decode(t, &page)
	g.Expect(page.Image.Automations).To(BeEmpty())
	g.Expect(page.Image.AutomationsNote).To(ContainSubstring("forbidden"))
	g.Expect(page.Source.Error).To(BeEmpty(), "the repository is read with the user's get")
}
