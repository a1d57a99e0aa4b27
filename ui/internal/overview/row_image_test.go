package overview

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	imagev1 "plumb.dev/api/image/v1"
	"plumb.dev/api/meta"
)

func TestImageRowsSayThePoliciesLatestImageTheLastScanAndTheLastPush(t *testing.T) {
	g := NewWithT(t)
	scanned := metav1.NewTime(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	pushed := metav1.NewTime(time.Date(2026, 12, 1, 11, 0, 0, 0, time.UTC))
	ready := []metav1.Condition{condition(meta.ReadyCondition, "True", meta.SucceededReason, "latest image tag for 'r.test/app' resolved to 1.4.2")}

	pol := &imagev1.ImagePolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "app"},
		Spec:   imagev1.ImagePolicySpec{ImageRepositoryRef: meta.NamespacedObjectReference{Name: "app"}},
		Status: imagev1.ImagePolicyStatus{Conditions: ready, LatestRef: &imagev1.ImageRef{Name: "r.test/app", Tag: "1.4.2"}}}
	r := rowOf(pol)
	g.Expect(r).NotTo(BeNil())
	g.Expect(r.Kind).To(Equal(imagev1.ImagePolicyKind))
	g.Expect(r.Revision).To(Equal("r.test/app:1.4.2"), "the overview's Revision column shows the latest image")
	g.Expect(r.Source).To(Equal(&Ref{Kind: imagev1.ImageRepositoryKind, Namespace: "apps", Name: "app"}))
	g.Expect(r.status).To(Equal(StatusReady))
	g.Expect(r.Health).To(BeNil())
	g.Expect(matches(r, "1.4.2")).To(BeTrue(), "a search for the tag finds the policy")

	repo := &imagev1.ImageRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "app"},
		Spec:   imagev1.ImageRepositorySpec{Suspend: true},
		Status: imagev1.ImageRepositoryStatus{LastScanResult: &imagev1.ScanResult{Revision: "sha256:abc", TagCount: 3, ScanTime: scanned}}}
	r = rowOf(repo)
	g.Expect(r.Revision).To(Equal("sha256:abc"))
	g.Expect(r.LastSync).To(HaveValue(Equal(scanned.UTC())))
	g.Expect(r.status).To(Equal(StatusSuspended))

	auto := &imagev1.ImageUpdateAutomation{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "bot"},
		Spec:   imagev1.ImageUpdateAutomationSpec{SourceRef: imagev1.GitSourceReference{Name: "repo", Namespace: "git"}},
		Status: imagev1.ImageUpdateAutomationStatus{LastPushCommit: "0123456789abcdef0123456789abcdef01234567", LastPushTime: &pushed}}
	r = rowOf(auto)
	g.Expect(r.Revision).To(Equal("sha1:0123456789abcdef0123456789abcdef01234567"))
	g.Expect(r.LastSync).To(HaveValue(Equal(pushed.UTC())))
	g.Expect(r.Source).To(Equal(&Ref{Kind: "GitRepository", Namespace: "git", Name: "repo"}))
	g.Expect(r.status).To(Equal(StatusProgressing), "no Ready yet")
}
