package controller

import (
	"context"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/testgit"
)

// gitmodules is a .gitmodules naming one submodule at vendor/lib.
func gitmodules(url string) string {
	return fmt.Sprintf("[submodule \"lib\"]\n\tpath = vendor/lib\n\turl = %s\n", url)
}

func TestRecurseSubmodulesPacksTheSubmodulesWithTheCredentialsOfTheirOwnHostOnly(t *testing.T) {
	g := NewWithT(t)
	lib, err := gitSrv.CreateRepo("submodules-lib")
	g.Expect(err).NotTo(HaveOccurred())
	libCommit := mustCommit(t, lib, "main", "lib", testgit.Files{"lib.yaml": "lib: 1"})
	repo := repoFor(t)
	c1 := mustCommit(t, repo, "main", "app", testgit.Files{
		"app.yaml":    "app: 1",
		".gitmodules": gitmodules("../submodules-lib.git"),
		"vendor/lib":  testgit.Gitlink(libCommit),
	})
	ns := namespace(t)
	auth := basicAuth(t, ns)

	// Without recurseSubmodules the submodule is an empty folder, as in Flux.
	plain := newGitRepository(ns, "plain", repo.URL(), auth, &sourcev1.GitRepositoryRef{Branch: "main"})
	g.Expect(k8s.Create(context.Background(), plain)).To(Succeed())
	plain = waitReady(t, keyOf(plain), "main@sha1:"+c1)
	g.Expect(files(t, download(t, plain.Status.Artifact))).NotTo(HaveKey("vendor/lib/lib.yaml"))
	g.Expect(plain.Status.ObservedRecurseSubmodules).To(BeFalse())

	// With it, the submodule (a relative URL, on the same host, fetched
	// with the same credentials) is packed at its pinned commit, without
	// its .git.
	obj := newGitRepository(ns, "recursive", repo.URL(), auth, &sourcev1.GitRepositoryRef{Branch: "main"})
	obj.Spec.RecurseSubmodules = true
	g.Expect(k8s.Create(context.Background(), obj)).To(Succeed())
	key := keyOf(obj)
	obj = waitReady(t, key, "main@sha1:"+c1)
	packed := files(t, download(t, obj.Status.Artifact))
	g.Expect(packed).To(HaveKeyWithValue("vendor/lib/lib.yaml", "lib: 1"))
	g.Expect(packed).To(HaveKeyWithValue("app.yaml", "app: 1"))
	for name := range packed {
		g.Expect(name).NotTo(ContainSubstring(".git/"))
	}
	g.Expect(obj.Status.ObservedRecurseSubmodules).To(BeTrue())
	good := obj.Status.Artifact

	// A later commit of the library is not taken until the gitlink moves.
	mustCommit(t, lib, "main", "lib 2", testgit.Files{"lib.yaml": "lib: 2"})

	// Submodules the spec's credentials must not reach, or that must not
	// be fetched at all, fail the fetch and keep the artifact.
	other, err := testgit.NewServer(testgit.Options{Username: gitUser, Password: gitPassword})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { other.Close() })
	ext, err := other.CreateRepo("ext")
	g.Expect(err).NotTo(HaveOccurred())
	extCommit := mustCommit(t, ext, "main", "ext", testgit.Files{"ext.yaml": "ext"})
	tests := []struct{ name, url, reason, message string }{
		{
			// The same user and password would open it: they are not sent
			// to another host (or port) than spec.url's.
			name: "other-host", url: ext.URL(), reason: sourcev1.AuthenticationFailedReason,
			message: "submodule vendor/lib: fetching from " + ext.URL() + ": the credentials were refused",
		},
		{
			name: "cloud-metadata", url: "http://169.254.169.254/lib.git", reason: sourcev1.GitOperationFailedReason,
			message: "submodule vendor/lib: fetching from http://169.254.169.254/lib.git: cannot connect: address 169.254.169.254 refused",
		},
		{
			name: "local-file", url: "file:///etc", reason: meta.InvalidSpecReason,
			message: `submodule vendor/lib: URL "file:///etc" in .gitmodules is not an http://, https:// or ssh:// URL`,
		},
	}
	for _, tt := range tests {
		mustCommit(t, repo, "main", tt.name, testgit.Files{".gitmodules": gitmodules(tt.url), "vendor/lib": testgit.Gitlink(extCommit)})
		requestReconcile(t, key, tt.name)
		obj = waitFailed(t, key, tt.reason)
		g.Expect(condition(obj, meta.ReadyCondition).Message).To(ContainSubstring(tt.message))
		g.Expect(obj.Status.Artifact).To(Equal(good))
	}

	// Turning recurseSubmodules off repacks the same commit without them.
	mustCommit(t, repo, "main", "back", testgit.Files{".gitmodules": gitmodules("../submodules-lib.git"), "vendor/lib": testgit.Gitlink(libCommit)})
	patch := client.MergeFrom(obj.DeepCopy())
	obj.Spec.RecurseSubmodules = false
	g.Expect(k8s.Patch(context.Background(), obj, patch)).To(Succeed())
	head, err := repo.Head("main")
	g.Expect(err).NotTo(HaveOccurred())
	obj = waitReady(t, key, "main@sha1:"+head)
	g.Expect(files(t, download(t, obj.Status.Artifact))).NotTo(HaveKey("vendor/lib/lib.yaml"))
	g.Expect(obj.Status.ObservedRecurseSubmodules).To(BeFalse())
}
