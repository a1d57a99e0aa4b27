package controller

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/testgit"
)

// A Git server over HTTPS with a certificate of a private CA: without
// the CA the clone fails on the certificate; with ca.crt in the
// GitRepository's Secret (pkg/gitauth) the automation clones and pushes.
func TestAutomationTrustsTheCAOfTheGitRepositorysSecret(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, image := policyFixture(t, "1.2.0")
	ca := newTestCA(t)
	srv, repo := gitServerWith(t, testgit.Options{TLS: ca.ServerConfig(false)}, testgit.Files{"deploy/app.yaml": manifest(ns, image+":1.0.0")})
	g.Expect(repo.URL()).To(HavePrefix("https://"))

	g.Expect(k8s.Create(ctx, newGitRepository(ns, "untrusted", repo.URL()))).To(Succeed())
	untrusted := newAutomation(ns, "untrusted", "untrusted")
	g.Expect(k8s.Create(ctx, untrusted)).To(Succeed())
	untrusted = waitReady(t, untrusted, metav1.ConditionFalse, sourcev1.GitOperationFailedReason)
	g.Expect(readyOf(untrusted.Status.Conditions).Message).To(ContainSubstring("x509: certificate signed by unknown authority"))
	g.Expect(srv.Pushes("app")).To(BeZero())

	g.Expect(k8s.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ca"},
		Data:       map[string][]byte{"ca.crt": ca.CA},
	})).To(Succeed())
	gitRepo := newGitRepository(ns, "app", repo.URL())
	gitRepo.Spec.SecretRef = &meta.LocalObjectReference{Name: "ca"}
	g.Expect(k8s.Create(ctx, gitRepo)).To(Succeed())
	auto := newAutomation(ns, "app", "app")
	g.Expect(k8s.Create(ctx, auto)).To(Succeed())
	auto = waitReady(t, auto, metav1.ConditionTrue, meta.SucceededReason)
	head, err := repo.Head("main")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(auto.Status.LastPushCommit).To(Equal(head))
	g.Expect(repo.File(head, "deploy/app.yaml")).To(Equal(manifest(ns, image+":1.2.0")))
}
