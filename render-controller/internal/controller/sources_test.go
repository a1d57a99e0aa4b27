package controller

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
)

// A Kustomization whose sourceRef is an OCIRepository renders that
// repository's artifact, not the one of a GitRepository of the same name,
// and re-renders as soon as the OCIRepository has a new artifact.
func TestKustomizationFromAnOCIRepositoryRenders(t *testing.T) {
	g := NewWithT(t)
	ns := namespace(t)
	gitRepo(t, ns, "podinfo", nil)
	publishTree(t, ns, "podinfo", "5555555555555555555555555555555555555555", map[string]string{"cm.yaml": cm("settings", "from: git")})

	ociRepo(t, ns, "podinfo")
	first := publishOCI(t, ns, "podinfo", "1.0.0@sha256:"+hex64('1'), map[string]string{"cm.yaml": cm("settings", "from: oci-one")})
	kustomization(t, ns, "app", "podinfo", func(s *kustomizev1.KustomizationSpec) {
		s.SourceRef.Kind = sourcev1.OCIRepositoryKind
	})
	ks := waitRevision(t, ns, "app", first.Revision)
	g.Expect(download(t, ks.Status.RenderedArtifact)).To(ContainSubstring("from: oci-one"))

	second := publishOCI(t, ns, "podinfo", "1.1.0@sha256:"+hex64('2'), map[string]string{"cm.yaml": cm("settings", "from: oci-two")})
	ks = waitRevision(t, ns, "app", second.Revision)
	g.Expect(download(t, ks.Status.RenderedArtifact)).To(ContainSubstring("from: oci-two"))
}

// A missing OCIRepository, then one without an artifact, is a wait named
// by its kind.
func TestKustomizationWaitsForItsOCIRepository(t *testing.T) {
	g := NewWithT(t)
	ns := namespace(t)
	kustomization(t, ns, "app", "absent", func(s *kustomizev1.KustomizationSpec) {
		s.SourceRef.Kind = sourcev1.OCIRepositoryKind
	})
	ks := waitRendered(t, ns, "app", metav1.ConditionFalse, meta.DependencyNotReadyReason)
	g.Expect(renderedCondition(ks).Message).To(Equal(fmt.Sprintf("OCIRepository %s/absent not found", ns)))
	ociRepo(t, ns, "absent")
	g.Eventually(func(g Gomega) {
		g.Expect(renderedCondition(getKS(g, ns, "app")).Message).To(Equal(fmt.Sprintf("OCIRepository %s/absent has no artifact yet", ns)))
	}, timeout, poll).Should(Succeed())
}

// An ExternalArtifact, written by some other producer, renders like any
// source: the wait names the producer's object, the artifact renders, and
// a new one re-renders.
func TestKustomizationFromAnExternalArtifactRenders(t *testing.T) {
	g := NewWithT(t)
	ns := namespace(t)
	ea := &sourcev1.ExternalArtifact{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bundle"},
		Spec: sourcev1.ExternalArtifactSpec{SourceRef: &sourcev1.ExternalArtifactSourceReference{
			APIVersion: "example.com/v1", Kind: "Bundle", Name: "app-bundle",
		}},
	}
	g.Expect(k8s.Create(context.Background(), ea)).To(Succeed())
	kustomization(t, ns, "app", "bundle", func(s *kustomizev1.KustomizationSpec) {
		s.SourceRef.Kind = sourcev1.ExternalArtifactKind
	})
	// The controller's cache may not hold the ExternalArtifact yet when the
	// Kustomization's first reconcile runs ("not found"): the wait it settles
	// on once the cache does is the producer's.
	waitRendered(t, ns, "app", metav1.ConditionFalse, meta.DependencyNotReadyReason)
	g.Eventually(func(g Gomega) {
		g.Expect(renderedCondition(getKS(g, ns, "app")).Message).To(Equal(fmt.Sprintf("ExternalArtifact %s/bundle has no artifact yet (produced from Bundle %s/app-bundle)", ns, ns)))
	}, timeout, poll).Should(Succeed())

	first := publishExternal(t, ns, "bundle", "v1.0.0@sha256:"+hex64('3'), map[string]string{"cm.yaml": cm("settings", "from: producer-one")})
	ks := waitRevision(t, ns, "app", first.Revision)
	g.Expect(download(t, ks.Status.RenderedArtifact)).To(ContainSubstring("from: producer-one"))
	second := publishExternal(t, ns, "bundle", "v1.0.1@sha256:"+hex64('4'), map[string]string{"cm.yaml": cm("settings", "from: producer-two")})
	ks = waitRevision(t, ns, "app", second.Revision)
	g.Expect(download(t, ks.Status.RenderedArtifact)).To(ContainSubstring("from: producer-two"))
}

func hex64(c byte) string {
	b := make([]byte, 64)
	for i := range b {
		b[i] = c
	}
	return string(b)
}

// ociRepo creates an OCIRepository with no artifact (source-controller
// does not run here).
func ociRepo(t *testing.T, ns, name string) {
	t.Helper()
	repo := &sourcev1.OCIRepository{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       sourcev1.OCIRepositorySpec{URL: "oci://registry.example/" + name, Interval: metav1.Duration{Duration: time.Hour}},
	}
	NewWithT(t).Expect(k8s.Create(context.Background(), repo)).To(Succeed())
}

// publishOCI packs files, serves them and sets them as the
// OCIRepository's artifact at revision, as source-controller would.
func publishOCI(t *testing.T, ns, name, revision string, files map[string]string) *meta.Artifact {
	t.Helper()
	a := sources.serve(fmt.Sprintf("/ocirepository/%s/%s/%s.tar.gz", ns, name, revision[len(revision)-64:]), revision, packTree(t, files), "")
	updateStatus(t, types.NamespacedName{Namespace: ns, Name: name}, &sourcev1.OCIRepository{}, func(o *sourcev1.OCIRepository) { o.Status.Artifact = a })
	return a
}

// publishExternal does the same for an ExternalArtifact, as its producer
// would.
func publishExternal(t *testing.T, ns, name, revision string, files map[string]string) *meta.Artifact {
	t.Helper()
	a := sources.serve(fmt.Sprintf("/bundle/%s/%s/%s.tar.gz", ns, name, revision[len(revision)-64:]), revision, packTree(t, files), "")
	updateStatus(t, types.NamespacedName{Namespace: ns, Name: name}, &sourcev1.ExternalArtifact{}, func(o *sourcev1.ExternalArtifact) { o.Status.Artifact = a })
	return a
}

func updateStatus[T client.Object](t *testing.T, key types.NamespacedName, obj T, set func(T)) {
	t.Helper()
	NewWithT(t).Eventually(func() error {
		if err := k8s.Get(context.Background(), key, obj); err != nil {
			return err
		}
		set(obj)
		return k8s.Status().Update(context.Background(), obj)
	}, timeout, poll).Should(Succeed())
}

// A Kustomization whose sourceRef is a Bucket renders the Bucket's
// artifact: render-controller reads the source kinds from pkg/kinds.
func TestKustomizationFromABucketRenders(t *testing.T) {
	g := NewWithT(t)
	ns := namespace(t)
	bucket := &sourcev1.Bucket{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "manifests"},
		Spec:       sourcev1.BucketSpec{BucketName: "manifests", Endpoint: "minio.example.com", Interval: metav1.Duration{Duration: time.Hour}},
	}
	g.Expect(k8s.Create(context.Background(), bucket)).To(Succeed())
	revision := "sha256:" + hex64('5')
	a := sources.serve(fmt.Sprintf("/bucket/%s/manifests/%s.tar.gz", ns, hex64('5')), revision, packTree(t, map[string]string{"cm.yaml": cm("settings", "from: bucket")}), "")
	updateStatus(t, types.NamespacedName{Namespace: ns, Name: "manifests"}, &sourcev1.Bucket{}, func(o *sourcev1.Bucket) { o.Status.Artifact = a })
	kustomization(t, ns, "app", "manifests", func(s *kustomizev1.KustomizationSpec) {
		s.SourceRef.Kind = sourcev1.BucketKind
	})
	ks := waitRevision(t, ns, "app", revision)
	g.Expect(download(t, ks.Status.RenderedArtifact)).To(ContainSubstring("from: bucket"))
}
