package controller

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	imagev1 "plumb.dev/api/image/v1"
	"plumb.dev/api/meta"
	"plumb.dev/pkg/request"
	"plumb.dev/pkg/testhelm"
)

func newPolicy(ns, name, repo string, choice imagev1.ImagePolicyChoice) *imagev1.ImagePolicy {
	return &imagev1.ImagePolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: imagev1.ImagePolicySpec{
			ImageRepositoryRef: meta.NamespacedObjectReference{Name: repo},
			Policy:             choice,
		},
	}
}

// scannedRepository creates an ImageRepository of image and waits for its
// first scan.
func scannedRepository(t *testing.T, ns, name, image string) *imagev1.ImageRepository {
	t.Helper()
	repo := newRepository(ns, name, image)
	NewWithT(t).Expect(k8s.Create(context.Background(), repo)).To(Succeed())
	return waitReady(t, repo, metav1.ConditionTrue, meta.SucceededReason)
}

// Each policy chooses its tag from the repository's scan, and says which
// in status.latestRef and Ready's message.
func TestImagePolicyChoosesByEachPolicy(t *testing.T) {
	reg := newRegistry(t, testhelm.RegistryOptions{})
	image := reg.Host() + "/app"
	push(t, image, nil, "1.0.0", "1.4.2", "2.0.0-rc.1", "20", "3", "main-1700000000-abc", "main-1800000000-def", "latest")
	ns := namespace(t)
	scannedRepository(t, ns, "app", image)

	for _, tc := range []struct {
		name   string
		choice imagev1.ImagePolicyChoice
		filter *imagev1.TagFilter
		want   string
	}{
		{"semver", imagev1.ImagePolicyChoice{SemVer: &imagev1.SemVerPolicy{Range: "^1.0"}}, nil, "1.4.2"},
		{"semver-prerelease", imagev1.ImagePolicyChoice{SemVer: &imagev1.SemVerPolicy{Range: ">=2.0.0-0"}}, nil, "20"},
		{"alphabetical", imagev1.ImagePolicyChoice{Alphabetical: &imagev1.AlphabeticalPolicy{}}, nil, "main-1800000000-def"},
		{"alphabetical-desc", imagev1.ImagePolicyChoice{Alphabetical: &imagev1.AlphabeticalPolicy{Order: "desc"}}, nil, "1.0.0"},
		{"numerical", imagev1.ImagePolicyChoice{Numerical: &imagev1.NumericalPolicy{}}, &imagev1.TagFilter{Pattern: `^[0-9]+$`}, "20"},
		{"numerical-desc", imagev1.ImagePolicyChoice{Numerical: &imagev1.NumericalPolicy{Order: "desc"}}, &imagev1.TagFilter{Pattern: `^[0-9]+$`}, "3"},
		{"extract", imagev1.ImagePolicyChoice{Numerical: &imagev1.NumericalPolicy{}},
			&imagev1.TagFilter{Pattern: `^main-(?P<ts>[0-9]+)-[a-z]+$`, Extract: "$ts"}, "main-1800000000-def"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			p := newPolicy(ns, tc.name, "app", tc.choice)
			p.Spec.FilterTags = tc.filter
			g.Expect(k8s.Create(context.Background(), p)).To(Succeed())
			p = waitReady(t, p, metav1.ConditionTrue, meta.SucceededReason)
			g.Expect(p.Status.LatestRef).To(Equal(&imagev1.ImageRef{Name: image, Tag: tc.want}))
			g.Expect(readyOf(p.Status.Conditions).Message).To(Equal("latest image tag for " + image + " resolved to " + tc.want))
		})
	}
}

// A new tag pushed and scanned (on request, as a registry webhook asks)
// moves the policy's latest image, and the previous one is kept.
func TestImagePolicyFollowsANewScan(t *testing.T) {
	g := NewWithT(t)
	reg := newRegistry(t, testhelm.RegistryOptions{})
	image := reg.Host() + "/app"
	push(t, image, nil, "1.0.0")
	ns := namespace(t)
	repo := scannedRepository(t, ns, "app", image)
	p := newPolicy(ns, "app", "app", imagev1.ImagePolicyChoice{SemVer: &imagev1.SemVerPolicy{Range: ">=1.0.0"}})
	g.Expect(k8s.Create(context.Background(), p)).To(Succeed())
	p = waitReady(t, p, metav1.ConditionTrue, meta.SucceededReason)
	g.Expect(p.Status.LatestRef.Tag).To(Equal("1.0.0"))

	push(t, image, nil, "1.1.0")
	_, err := request.Reconcile(context.Background(), k8s, repo, nil, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(p), p)).To(Succeed())
		g.Expect(p.Status.LatestRef).NotTo(BeNil())
		g.Expect(p.Status.LatestRef.Tag).To(Equal("1.1.0"))
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	g.Expect(p.Status.ObservedPreviousRef).To(Equal(&imagev1.ImageRef{Name: image, Tag: "1.0.0"}))
	g.Expect(readyOf(p.Status.Conditions).Message).To(Equal("latest image tag for " + image + " updated from 1.0.0 to 1.1.0"))
}

// digestReflectionPolicy: Never leaves the digest empty, IfNotPresent
// and Always read it from the registry, Always again after the tag is
// pushed anew.
func TestImagePolicyReflectsDigests(t *testing.T) {
	g := NewWithT(t)
	reg := newRegistry(t, testhelm.RegistryOptions{})
	image := reg.Host() + "/app"
	first := push(t, image, nil, "1.0.0")["1.0.0"]
	ns := namespace(t)
	scannedRepository(t, ns, "app", image)
	semver := imagev1.ImagePolicyChoice{SemVer: &imagev1.SemVerPolicy{Range: "1.x"}}

	never := newPolicy(ns, "never", "app", semver)
	once := newPolicy(ns, "once", "app", semver)
	once.Spec.DigestReflectionPolicy = imagev1.ReflectIfNotPresent
	always := newPolicy(ns, "always", "app", semver)
	always.Spec.DigestReflectionPolicy = imagev1.ReflectAlways
	always.Spec.Interval = &metav1.Duration{Duration: time.Second}
	for _, p := range []*imagev1.ImagePolicy{never, once, always} {
		g.Expect(k8s.Create(context.Background(), p)).To(Succeed())
		waitReady(t, p, metav1.ConditionTrue, meta.SucceededReason)
	}
	g.Expect(never.Status.LatestRef.Digest).To(BeEmpty())
	g.Expect(once.Status.LatestRef.Digest).To(Equal(first))
	g.Expect(always.Status.LatestRef.Digest).To(Equal(first))
	g.Expect(readyOf(always.Status.Conditions).Message).To(HaveSuffix(" with digest " + first))

	second := push(t, image, nil, "1.0.0")["1.0.0"]
	g.Expect(second).NotTo(Equal(first))
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(always), always)).To(Succeed())
		g.Expect(always.Status.LatestRef.Digest).To(Equal(second))
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	g.Expect(always.Status.ObservedPreviousRef).To(Equal(&imagev1.ImageRef{Name: image, Tag: "1.0.0", Digest: first}))
	g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(once), once)).To(Succeed())
	g.Expect(once.Status.LatestRef.Digest).To(Equal(first), "IfNotPresent keeps the digest it read for the same tag")

	// An interval with another policy than Always is refused at admission.
	bad := newPolicy(ns, "interval-never", "app", semver)
	bad.Spec.Interval = &metav1.Duration{Duration: time.Minute}
	err := k8s.Create(context.Background(), bad)
	g.Expect(err).To(HaveOccurred())
	g.Expect(err.Error()).To(ContainSubstring("spec.interval is only accepted when spec.digestReflectionPolicy is Always"))
}

// A policy whose repository is in another namespace is refused under
// --no-cross-namespace-refs (the suite's), a missing repository is
// waited for, and an unusable policy or one no tag matches says so.
func TestImagePolicyFailuresAreTold(t *testing.T) {
	g := NewWithT(t)
	reg := newRegistry(t, testhelm.RegistryOptions{})
	image := reg.Host() + "/app"
	push(t, image, nil, "1.0.0", "latest")
	ns, other := namespace(t), namespace(t)
	scannedRepository(t, other, "app", image)

	cross := newPolicy(ns, "cross", "app", imagev1.ImagePolicyChoice{Alphabetical: &imagev1.AlphabeticalPolicy{}})
	cross.Spec.ImageRepositoryRef.Namespace = other
	g.Expect(k8s.Create(context.Background(), cross)).To(Succeed())
	cross = waitReady(t, cross, metav1.ConditionFalse, imagev1.AccessDeniedReason)
	g.Expect(readyOf(cross.Status.Conditions).Message).To(ContainSubstring("cross-namespace references are not allowed"))
	g.Expect(cross.Status.LatestRef).To(BeNil())

	missing := newPolicy(ns, "missing", "absent", imagev1.ImagePolicyChoice{Alphabetical: &imagev1.AlphabeticalPolicy{}})
	g.Expect(k8s.Create(context.Background(), missing)).To(Succeed())
	waitReady(t, missing, metav1.ConditionFalse, meta.DependencyNotReadyReason)

	scannedRepository(t, ns, "app", image)
	for name, tc := range map[string]struct {
		choice imagev1.ImagePolicyChoice
		reason string
	}{
		"bad-range":  {imagev1.ImagePolicyChoice{SemVer: &imagev1.SemVerPolicy{Range: "not-a-range"}}, imagev1.InvalidPolicyReason},
		"no-match":   {imagev1.ImagePolicyChoice{SemVer: &imagev1.SemVerPolicy{Range: ">=5"}}, imagev1.NoMatchingTagReason},
		"not-number": {imagev1.ImagePolicyChoice{Numerical: &imagev1.NumericalPolicy{}}, imagev1.InvalidPolicyReason},
	} {
		p := newPolicy(ns, name, "app", tc.choice)
		g.Expect(k8s.Create(context.Background(), p)).To(Succeed())
		waitReady(t, p, metav1.ConditionFalse, tc.reason)
	}

	// Two policies at once are refused at admission.
	both := newPolicy(ns, "both", "app", imagev1.ImagePolicyChoice{Alphabetical: &imagev1.AlphabeticalPolicy{}, Numerical: &imagev1.NumericalPolicy{}})
	err := k8s.Create(context.Background(), both)
	g.Expect(err).To(HaveOccurred())
	g.Expect(err.Error()).To(ContainSubstring("exactly one of semver, alphabetical and numerical"))
}
