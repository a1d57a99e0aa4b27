package controller

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"

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
	g.Expect(failingAutomation(t, ns, "untrusted", sourcev1.GitOperationFailedReason)).To(
		ContainSubstring("x509: certificate signed by unknown authority"))
	g.Expect(srv.Pushes("app")).To(BeZero())

	gitRepositoryWithSecret(t, ns, "app", repo.URL(), map[string][]byte{"ca.crt": ca.CA})
	pushingAutomation(t, ns, "app", repo, manifest(ns, image+":1.2.0"))
}
