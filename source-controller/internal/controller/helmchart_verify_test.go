package controller

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/testhelm"
	"plumb.dev/source-controller/internal/oci/cosigntest"
)

// A HelmChart with spec.verify from an OCI HelmRepository: a signed
// version becomes the artifact (SourceVerified=True); a newer version
// unsigned, then signed by a key the Secret does not hold, is refused
// (InvalidArtifactSignature) while the verified chart keeps being
// served; signed by a trusted key it becomes the artifact.
func TestHelmChartVerifiesTheSignatureOfAnOCIChart(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	trusted, stranger := cosigntest.NewKey(t), cosigntest.NewKey(t)
	reg := newRegistry(t, testhelm.RegistryOptions{})
	repo := reg.URL() + "/podinfo"
	first := pushChart(t, reg, "1.0.0")
	trusted.Sign(t, repo, first)
	ns := namespace(t)
	credentials(t, ns, "cosign-keys", map[string]string{"release.pub": string(trusted.PublicPEM)})
	hr := newHelmRepository(ns, "oci", reg.URL(), nil)
	hr.Spec.Type = sourcev1.HelmRepositoryTypeOCI
	hr.Spec.Insecure = true
	g.Expect(k8s.Create(ctx, hr)).To(Succeed())

	hc := newHelmChart(ns, "podinfo", "podinfo", "^1", sourcev1.HelmRepositoryKind, "oci")
	hc.Spec.Verify = &sourcev1.OCIRepositoryVerification{Provider: sourcev1.OCIVerifyCosign, SecretRef: meta.LocalObjectReference{Name: "cosign-keys"}}
	g.Expect(k8s.Create(ctx, hc)).To(Succeed())
	waitHelmReady(t, hc, "1.0.0")
	verified := conditionOf(hc, sourcev1.SourceVerifiedCondition)
	g.Expect(verified.Status).To(Equal(metav1.ConditionTrue))
	g.Expect(verified.Message).To(Equal("verified cosign signature of version 1.0.0 (" + first + ") with key release.pub of spec.verify.secretRef"))
	good := hc.Status.Artifact.DeepCopy()

	second := pushChart(t, reg, "1.1.0")
	requestHelmReconcile(t, hc, "unsigned")
	waitHelmFailed(t, hc, sourcev1.InvalidArtifactSignatureReason)
	g.Expect(conditionOf(hc, meta.ReadyCondition).Message).To(ContainSubstring("version 1.1.0 (" + second + ") refused, no artifact made of it: the artifact " + second + " is not signed"))
	g.Expect(conditionOf(hc, sourcev1.SourceVerifiedCondition).Status).To(Equal(metav1.ConditionFalse))
	g.Expect(conditionOf(hc, sourcev1.FetchFailedCondition)).To(BeNil(), "nothing failed to fetch")
	g.Expect(hc.Status.Artifact).To(Equal(good))
	ch, _ := loadChart(t, hc.Status.Artifact)
	g.Expect(ch.Metadata.Version).To(Equal("1.0.0"))

	stranger.Sign(t, repo, second)
	requestHelmReconcile(t, hc, "stranger")
	waitHelmCondition(t, hc, func(g Gomega, ready *metav1.Condition) {
		g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(ready.Reason).To(Equal(sourcev1.InvalidArtifactSignatureReason))
		g.Expect(ready.Message).To(ContainSubstring("made by none of the keys"))
	})
	g.Expect(hc.Status.Artifact).To(Equal(good))

	trusted.Sign(t, repo, second)
	requestHelmReconcile(t, hc, "trusted")
	waitHelmReady(t, hc, "1.1.0")
	g.Expect(conditionOf(hc, sourcev1.SourceVerifiedCondition).Message).To(ContainSubstring("version 1.1.0 (" + second + ")"))

	// Without spec.verify the condition goes.
	g.Expect(k8s.Get(ctx, keyOf(hc), hc)).To(Succeed())
	hc.Spec.Verify = nil
	g.Expect(k8s.Update(ctx, hc)).To(Succeed())
	waitHelmCondition(t, hc, func(g Gomega, ready *metav1.Condition) {
		g.Expect(ready.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(ready.ObservedGeneration).To(Equal(hc.Generation))
	})
	g.Expect(conditionOf(hc, sourcev1.SourceVerifiedCondition)).To(BeNil())
}

// spec.verify on a chart from a source without OCI signatures (a
// GitRepository, an HTTP HelmRepository) stalls with a message instead of
// serving the chart unverified.
func TestHelmChartRefusesVerifyForASourceWithoutSignatures(t *testing.T) {
	ns := namespace(t)
	verify := &sourcev1.OCIRepositoryVerification{SecretRef: meta.LocalObjectReference{Name: "keys"}}
	for _, kind := range []string{sourcev1.GitRepositoryKind, sourcev1.BucketKind} {
		t.Run(kind, func(t *testing.T) {
			g := NewWithT(t)
			hc := newHelmChart(ns, "verify-"+strings.ToLower(kind), "podinfo", "", kind, "absent")
			hc.Spec.Verify = verify
			g.Expect(k8s.Create(context.Background(), hc)).To(Succeed())
			waitHelmFailed(t, hc, meta.InvalidSpecReason)
			g.Expect(conditionOf(hc, meta.StalledCondition).Status).To(Equal(metav1.ConditionTrue))
			g.Expect(conditionOf(hc, meta.ReadyCondition).Message).To(ContainSubstring("spec.verify checks the signatures of charts from an OCI HelmRepository; a " + kind + " has none"))
			g.Expect(hc.Status.Artifact).To(BeNil())
		})
	}
}

// pushChart pushes podinfo at version to reg and returns its manifest
// digest.
func pushChart(t *testing.T, reg *testhelm.Registry, version string) string {
	t.Helper()
	ref, err := reg.Push(configMapChart("podinfo", version))
	if err != nil {
		t.Fatal(err)
	}
	tag, err := name.NewTag(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	d, err := remote.Head(tag)
	if err != nil {
		t.Fatal(err)
	}
	return d.Digest.String()
}
