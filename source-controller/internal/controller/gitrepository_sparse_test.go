package controller

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/testgit"
)

func TestSparseCheckoutPacksOnlyItsDirectories(t *testing.T) {
	g := NewWithT(t)
	trusted := newSigningKey(t, "trusted")
	repo := repoFor(t)
	c1 := commitAs(t, repo, trusted.Entity, "main", "monorepo", testgit.Files{
		"README.md":               "root",
		"clusters/prod/app.yaml":  "prod",
		"clusters/prod-eu/x.yaml": "a prefix of prod, not prod",
		"clusters/staging/a.yaml": "staging",
		"infra/cm.yaml":           "infra",
	})
	ns := namespace(t)
	credentials(t, ns, "keys", map[string]string{"trusted.asc": trusted.Public})
	obj := verifying(newGitRepository(ns, "sparse", repo.URL(), basicAuth(t, ns), &sourcev1.GitRepositoryRef{Branch: "main"}),
		sourcev1.ModeGitHEAD, "keys")
	obj.Spec.SparseCheckout = []string{"./clusters/prod", "infra"}
	obj.Spec.Ignore = ptr("*.md\n")
	g.Expect(k8s.Create(context.Background(), obj)).To(Succeed())
	key := keyOf(obj)

	// Only the two folders are packed; the signature is checked on the
	// commit packed, which the sparse checkout does not change.
	obj = waitReady(t, key, "main@sha1:"+c1)
	g.Expect(files(t, download(t, obj.Status.Artifact))).To(Equal(map[string]string{
		"clusters/prod/app.yaml": "prod", "infra/cm.yaml": "infra",
	}))
	g.Expect(condition(obj, sourcev1.SourceVerifiedCondition).Status).To(Equal(metav1.ConditionTrue))
	g.Expect(condition(obj, sourcev1.SourceVerifiedCondition).Message).To(ContainSubstring(c1))
	g.Expect(obj.Status.ObservedSparseCheckout).To(Equal([]string{"./clusters/prod", "infra"}))
	g.Expect(obj.Status.ObservedIgnore).To(Equal(ptr("*.md\n")))
	sparseDigest := obj.Status.Artifact.Digest

	// A folder the commit lacks fails the fetch; the artifact of the
	// previous spec stays, and the observed fields still describe it.
	patch := client.MergeFrom(obj.DeepCopy())
	obj.Spec.SparseCheckout = []string{"clusters/prod", "apps"}
	g.Expect(k8s.Patch(context.Background(), obj, patch)).To(Succeed())
	obj = waitFailed(t, key, sourcev1.ReferenceNotFoundReason)
	g.Expect(condition(obj, sourcev1.FetchFailedCondition).Message).To(ContainSubstring(`spec.sparseCheckout directory "apps"`))
	g.Expect(obj.Status.Artifact.Digest).To(Equal(sparseDigest))
	g.Expect(obj.Status.ObservedSparseCheckout).To(Equal([]string{"./clusters/prod", "infra"}))

	// Without sparseCheckout the same commit is packed whole.
	patch = client.MergeFrom(obj.DeepCopy())
	obj.Spec.SparseCheckout = nil
	g.Expect(k8s.Patch(context.Background(), obj, patch)).To(Succeed())
	g.Eventually(func(g Gomega) {
		obj = get(g, key)
		g.Expect(obj.Status.ObservedGeneration).To(Equal(obj.Generation))
		g.Expect(obj.Status.Artifact.Digest).NotTo(Equal(sparseDigest))
	}, timeout, poll).Should(Succeed())
	obj = waitReady(t, key, "main@sha1:"+c1)
	g.Expect(files(t, download(t, obj.Status.Artifact))).To(HaveLen(4))
	g.Expect(obj.Status.ObservedSparseCheckout).To(BeNil())
}
