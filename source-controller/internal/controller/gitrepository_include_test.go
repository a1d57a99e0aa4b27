package controller

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/testgit"
)

func including(obj *sourcev1.GitRepository, includes ...sourcev1.GitRepositoryInclude) *sourcev1.GitRepository {
	obj.Spec.Include = includes
	return obj
}

func include(name, from, to string) sourcev1.GitRepositoryInclude {
	return sourcev1.GitRepositoryInclude{GitRepositoryRef: meta.LocalObjectReference{Name: name}, FromPath: from, ToPath: to}
}

func TestIncludeCopiesAnotherArtifactAndFollowsIt(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	libRepo, err := gitSrv.CreateRepo("include-lib")
	g.Expect(err).NotTo(HaveOccurred())
	l1, err := libRepo.Commit("main", "lib", testgit.Files{"deploy/a.yaml": "lib: 1", "README.md": "lib docs"})
	g.Expect(err).NotTo(HaveOccurred())
	appRepo, err := gitSrv.CreateRepo("include-app")
	g.Expect(err).NotTo(HaveOccurred())
	a1, err := appRepo.Commit("main", "app", testgit.Files{"app.yaml": "app", "vendor/lib/stale.yaml": "replaced by the include"})
	g.Expect(err).NotTo(HaveOccurred())
	ns := namespace(t)
	secret := basicAuth(t, ns)

	lib := newGitRepository(ns, "lib", libRepo.URL(), secret, &sourcev1.GitRepositoryRef{Branch: "main"})
	g.Expect(k8s.Create(ctx, lib)).To(Succeed())
	libArtifact := waitReady(t, keyOf(lib), "main@sha1:"+l1).Status.Artifact

	// Into vendor/lib, the lib's deploy folder replaces what the app has
	// there; with no toPath, the whole lib lands at lib/.
	app := including(newGitRepository(ns, "app", appRepo.URL(), secret, &sourcev1.GitRepositoryRef{Branch: "main"}),
		include("lib", "deploy", "vendor/lib"), include("lib", "", ""))
	g.Expect(k8s.Create(ctx, app)).To(Succeed())
	key := keyOf(app)
	app = waitReady(t, key, "main@sha1:"+a1)
	g.Expect(files(t, download(t, app.Status.Artifact))).To(Equal(map[string]string{
		"app.yaml":          "app",
		"vendor/lib/a.yaml": "lib: 1",
		"lib/deploy/a.yaml": "lib: 1",
		"lib/README.md":     "lib docs",
	}))
	g.Expect(app.Status.ObservedInclude).To(Equal(app.Spec.Include))
	g.Expect(app.Status.IncludedArtifacts).To(HaveLen(2))
	g.Expect(app.Status.IncludedArtifacts[0].Digest).To(Equal(libArtifact.Digest))
	g.Expect(condition(app, sourcev1.IncludeUnavailableCondition)).To(BeNil())
	first := app.Status.Artifact.DeepCopy()

	// A new lib artifact alone reconciles the app (its interval is an
	// hour): same Git revision, new content and digest.
	l2, err := libRepo.Commit("main", "lib 2", testgit.Files{"deploy/a.yaml": "lib: 2"})
	g.Expect(err).NotTo(HaveOccurred())
	requestReconcile(t, keyOf(lib), "new-lib")
	waitReady(t, keyOf(lib), "main@sha1:"+l2)
	g.Eventually(func(g Gomega) {
		app = get(g, key)
		g.Expect(app.Status.Artifact.Digest).NotTo(Equal(first.Digest))
	}, timeout, poll).Should(Succeed())
	g.Expect(app.Status.Artifact.Revision).To(Equal(first.Revision))
	g.Expect(files(t, download(t, app.Status.Artifact))).To(HaveKeyWithValue("vendor/lib/a.yaml", "lib: 2"))
	g.Expect(app.Status.IncludedArtifacts[0].Revision).To(Equal("main@sha1:" + l2))

	// Nothing changed anywhere: no clone, no repack.
	fetches := appRepo.Fetches()
	unchanged := requestReconcile(t, key, "unchanged")
	g.Expect(appRepo.Fetches()).To(Equal(fetches))
	g.Expect(unchanged.Status.Artifact).To(Equal(app.Status.Artifact))

	// Dropping the includes rebuilds the artifact without them.
	patch := client.MergeFrom(app.DeepCopy())
	app.Spec.Include = nil
	g.Expect(k8s.Patch(ctx, app, patch)).To(Succeed())
	g.Eventually(func(g Gomega) {
		app = get(g, key)
		g.Expect(app.Status.ObservedGeneration).To(Equal(app.Generation))
		g.Expect(app.Status.ObservedInclude).To(BeNil())
	}, timeout, poll).Should(Succeed())
	g.Expect(files(t, download(t, app.Status.Artifact))).To(Equal(map[string]string{
		"app.yaml": "app", "vendor/lib/stale.yaml": "replaced by the include",
	}))
	g.Expect(app.Status.IncludedArtifacts).To(BeNil())
}

func TestIncludeFailuresKeepThePreviousArtifact(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	big := make([]byte, 200<<10)
	_, err := rand.Read(big)
	g.Expect(err).NotTo(HaveOccurred())
	libRepo, err := gitSrv.CreateRepo("include-failures-lib")
	g.Expect(err).NotTo(HaveOccurred())
	l1, err := libRepo.Commit("main", "lib", testgit.Files{"deploy/a.yaml": "lib", "blob.bin": hex.EncodeToString(big)})
	g.Expect(err).NotTo(HaveOccurred())
	appRepo, err := gitSrv.CreateRepo("include-failures-app")
	g.Expect(err).NotTo(HaveOccurred())
	a1, err := appRepo.Commit("main", "app", testgit.Files{"app.yaml": "app"})
	g.Expect(err).NotTo(HaveOccurred())
	ns := namespace(t)
	secret := basicAuth(t, ns)
	lib := newGitRepository(ns, "lib", libRepo.URL(), secret, &sourcev1.GitRepositoryRef{Branch: "main"})
	g.Expect(k8s.Create(ctx, lib)).To(Succeed())
	waitReady(t, keyOf(lib), "main@sha1:"+l1)
	// idle never gets an artifact: it is suspended from the start.
	idle := newGitRepository(ns, "idle", libRepo.URL(), secret, nil)
	idle.Spec.Suspend = true
	g.Expect(k8s.Create(ctx, idle)).To(Succeed())
	// forged claims lib's artifact as its own in its status (anyone who
	// may write a GitRepository's status could).
	forged := newGitRepository(ns, "forged", libRepo.URL(), secret, nil)
	forged.Spec.Suspend = true
	g.Expect(k8s.Create(ctx, forged)).To(Succeed())
	g.Eventually(func() error {
		f := get(g, keyOf(forged))
		f.Status.Artifact = get(g, keyOf(lib)).Status.Artifact.DeepCopy()
		return k8s.Status().Update(ctx, f)
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	// loop-a includes loop-b, which includes loop-a.
	loopB := including(newGitRepository(ns, "loop-b", libRepo.URL(), secret, &sourcev1.GitRepositoryRef{Branch: "main"}), include("loop-a", "", ""))
	g.Expect(k8s.Create(ctx, loopB)).To(Succeed())

	tests := []struct {
		name     string
		includes []sourcev1.GitRepositoryInclude
		reason   string
		message  string
	}{
		{name: "not-found", includes: []sourcev1.GitRepositoryInclude{include("absent", "", "")},
			reason: sourcev1.IncludeNotFoundReason, message: "spec.include: GitRepository " + ns + "/absent not found"},
		{name: "no-artifact", includes: []sourcev1.GitRepositoryInclude{include("idle", "", "")},
			reason: sourcev1.NoIncludedArtifactReason, message: "GitRepository " + ns + "/idle has no artifact yet"},
		{name: "forged-path", includes: []sourcev1.GitRepositoryInclude{include("forged", "", "")},
			reason: sourcev1.NoIncludedArtifactReason, message: "GitRepository " + ns + "/forged has no artifact of its own"},
		{name: "from-path-missing", includes: []sourcev1.GitRepositoryInclude{include("lib", "charts", "")},
			reason: sourcev1.IncludeFailedReason, message: `fromPath "charts": no such folder in the artifact`},
		{name: "to-path-git", includes: []sourcev1.GitRepositoryInclude{include("lib", "", ".git/hooks")},
			reason: meta.InvalidSpecReason, message: `toPath ".git/hooks" is inside .git`},
		{name: "loop-a", includes: []sourcev1.GitRepositoryInclude{include("loop-b", "", "")},
			reason: sourcev1.IncludeFailedReason, message: "spec.include forms a cycle: loop-a includes loop-b includes loop-a"},
		// Three copies of the lib's 400 KB pass the 1 MiB limit.
		{name: "too-large", includes: []sourcev1.GitRepositoryInclude{include("lib", "", "a"), include("lib", "", "b"), include("lib", "", "c")},
			reason: sourcev1.IncludeFailedReason, message: "passes the limit of 1048576 bytes (--max-repository-size)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			obj := newGitRepository(ns, tt.name, appRepo.URL(), secret, &sourcev1.GitRepositoryRef{Branch: "main"})
			g.Expect(k8s.Create(ctx, obj)).To(Succeed())
			key := keyOf(obj)
			before := waitReady(t, key, "main@sha1:"+a1).Status.Artifact

			obj = get(g, key)
			patch := client.MergeFrom(obj.DeepCopy())
			obj.Spec.Include = tt.includes
			g.Expect(k8s.Patch(ctx, obj, patch)).To(Succeed())
			obj = waitFailed(t, key, tt.reason)
			c := condition(obj, sourcev1.IncludeUnavailableCondition)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(c.Message).To(ContainSubstring(tt.message))
			g.Expect(condition(obj, meta.ReadyCondition).Message).To(ContainSubstring(tt.message))
			g.Expect(obj.Status.Artifact).To(Equal(before))
			g.Expect(obj.Status.ObservedInclude).To(BeNil())
		})
	}
}
