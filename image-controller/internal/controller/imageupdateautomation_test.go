package controller

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/memory"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	imagev1 "plumb.dev/api/image/v1"
	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/gitreach"
	"plumb.dev/pkg/request"
	"plumb.dev/pkg/testgit"
	"plumb.dev/pkg/testhelm"
)

// manifest is a Deployment whose image is marked for the policy ns:app.
func manifest(ns, image string) string {
	return `apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
spec:
  template:
    spec:
      containers:
        - name: app
          image: ` + image + ` # {"$imagepolicy": "` + ns + `:app"}
`
}

// gitServer is a Git server that accepts pushes, with one repository
// holding files on main.
func gitServer(t *testing.T, files testgit.Files) (*testgit.Server, *testgit.Repo) {
	t.Helper()
	return gitServerWith(t, testgit.Options{}, files)
}

// gitServerWith is gitServer with opts (Push is always set).
func gitServerWith(t *testing.T, opts testgit.Options, files testgit.Files) (*testgit.Server, *testgit.Repo) {
	t.Helper()
	opts.Push = true
	srv, err := testgit.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	repo, err := srv.CreateRepo("app")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Commit("main", "initial", files); err != nil {
		t.Fatal(err)
	}
	return srv, repo
}

// readBranch returns the commit at branch's head of url and the content
// of path in it. go-git connects through gitreach here too, as the
// package's import installed it for the process.
func readBranch(t *testing.T, url, branch, path string) (*gitCommit, string) {
	t.Helper()
	c := readCommit(t, url, branch)
	f, err := c.File(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := f.Reader()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return &gitCommit{Hash: c.Hash.String(), AuthorName: c.Author.Name, AuthorEmail: c.Author.Email, Message: c.Message}, string(b)
}

type gitCommit struct{ Hash, AuthorName, AuthorEmail, Message string }

// policyFixture starts a registry holding image:tag, and in a new
// namespace a policy "app" over it that chose tag (readyPolicy); it
// returns the namespace and the image.
func policyFixture(t *testing.T, tag string) (ns, image string) {
	t.Helper()
	reg := newRegistry(t, testhelm.RegistryOptions{})
	image = reg.Host() + "/app"
	push(t, image, nil, tag)
	ns = namespace(t)
	readyPolicy(t, ns, image, tag)
	return ns, image
}

// automationFixture is policyFixture with a Git server whose repository
// "app" holds deploy/app.yaml at image:1.0.0 on main, and a
// GitRepository "app" of it.
func automationFixture(t *testing.T, tag string) (ns, image string, srv *testgit.Server, repo *testgit.Repo) {
	t.Helper()
	ns, image = policyFixture(t, tag)
	srv, repo = gitServer(t, testgit.Files{"deploy/app.yaml": manifest(ns, image+":1.0.0")})
	NewWithT(t).Expect(k8s.Create(context.Background(), newGitRepository(ns, "app", repo.URL()))).To(Succeed())
	return ns, image, srv, repo
}

// gitRepositoryWithSecret creates a GitRepository name of url whose
// secretRef is a Secret name holding data (pkg/gitauth's keys).
func gitRepositoryWithSecret(t *testing.T, ns, name, url string, data map[string][]byte) {
	t.Helper()
	g := NewWithT(t)
	g.Expect(k8s.Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: data,
	})).To(Succeed())
	gitRepo := newGitRepository(ns, name, url)
	gitRepo.Spec.SecretRef = &meta.LocalObjectReference{Name: name}
	g.Expect(k8s.Create(context.Background(), gitRepo)).To(Succeed())
}

// failingAutomation creates the automation name on the GitRepository
// name, waits for Ready=False with reason and returns Ready's message.
func failingAutomation(t *testing.T, ns, name, reason string) string {
	t.Helper()
	auto := newAutomation(ns, name, name)
	NewWithT(t).Expect(k8s.Create(context.Background(), auto)).To(Succeed())
	return readyOf(waitReady(t, auto, metav1.ConditionFalse, reason).Status.Conditions).Message
}

// pushingAutomation creates the automation name on the GitRepository
// name, waits for Ready=True, and checks that its status names main's
// head, whose deploy/app.yaml is want; it returns the head.
func pushingAutomation(t *testing.T, ns, name string, repo *testgit.Repo, want string) string {
	t.Helper()
	g := NewWithT(t)
	auto := newAutomation(ns, name, name)
	g.Expect(k8s.Create(context.Background(), auto)).To(Succeed())
	auto = waitReady(t, auto, metav1.ConditionTrue, meta.SucceededReason)
	head, err := repo.Head("main")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(auto.Status.LastPushCommit).To(Equal(head))
	g.Expect(repo.File(head, "deploy/app.yaml")).To(Equal(want))
	return head
}

// automationEvents returns the messages of the events of reason about
// the ImageUpdateAutomations of ns.
func automationEvents(g Gomega, ns, reason string) []string {
	var list corev1.EventList
	g.Expect(k8s.List(context.Background(), &list, client.InNamespace(ns))).To(Succeed())
	var notes []string
	for _, e := range list.Items {
		if e.InvolvedObject.Kind == imagev1.ImageUpdateAutomationKind && e.Reason == reason {
			notes = append(notes, e.Message)
		}
	}
	return notes
}

// readyPolicy creates an ImageRepository of image and a semver policy
// "app" over it, and waits for the policy to choose want.
func readyPolicy(t *testing.T, ns, image, want string) *imagev1.ImagePolicy {
	t.Helper()
	scannedRepository(t, ns, "app", image)
	p := newPolicy(ns, "app", "app", imagev1.ImagePolicyChoice{SemVer: &imagev1.SemVerPolicy{Range: "^1.0"}})
	NewWithT(t).Expect(k8s.Create(context.Background(), p)).To(Succeed())
	p = waitReady(t, p, metav1.ConditionTrue, meta.SucceededReason)
	NewWithT(t).Expect(p.Status.LatestRef.Tag).To(Equal(want))
	return p
}

func newGitRepository(ns, name, url string) *sourcev1.GitRepository {
	return &sourcev1.GitRepository{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: sourcev1.GitRepositorySpec{
			URL: url, Interval: metav1.Duration{Duration: time.Hour},
			Reference: &sourcev1.GitRepositoryRef{Branch: "main"},
		},
	}
}

func newAutomation(ns, name, gitRepo string) *imagev1.ImageUpdateAutomation {
	return &imagev1.ImageUpdateAutomation{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: imagev1.ImageUpdateAutomationSpec{
			SourceRef: imagev1.GitSourceReference{Kind: "GitRepository", Name: gitRepo},
			Interval:  metav1.Duration{Duration: time.Hour},
			Git: imagev1.GitSpec{Commit: imagev1.CommitSpec{
				Author:                imagev1.CommitUser{Name: "Plumb Bot", Email: "bot@example.com"},
				MessageTemplate:       `{{ .Values.prefix }} {{ .AutomationObject }}{{ range .Changed.Changes }} {{ .OldValue }}->{{ .NewValue }}{{ end }}`,
				MessageTemplateValues: map[string]string{"prefix": "chore:"},
			}},
			Update: &imagev1.UpdateStrategy{Strategy: imagev1.UpdateStrategySetters, Path: "deploy"},
		},
	}
}

// A repository already at the policy's image gets no commit; a new tag
// pushed and scanned moves the policy, and the automation commits the
// new image to main at once (the policy's watch, not the hour's
// interval), as its author with the template's message, records the
// commit, and asks for the GitRepository's reconcile.
func TestAutomationCommitsANewTag(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, image := policyFixture(t, "1.0.0")
	srv, repo := gitServer(t, testgit.Files{"deploy/app.yaml": manifest(ns, image+":1.0.0"), "other/app.yaml": manifest(ns, image+":1.0.0")})
	g.Expect(k8s.Create(ctx, newGitRepository(ns, "app", repo.URL()))).To(Succeed())

	auto := newAutomation(ns, "app", "app")
	g.Expect(k8s.Create(ctx, auto)).To(Succeed())
	auto = waitReady(t, auto, metav1.ConditionTrue, meta.SucceededReason)
	g.Expect(readyOf(auto.Status.Conditions).Message).To(Equal("repository up-to-date"))
	g.Expect(auto.Status.LastPushCommit).To(BeEmpty())
	g.Expect(auto.Status.LastAutomationRunTime).NotTo(BeNil())
	g.Expect(auto.Status.ObservedPolicies).To(Equal(map[string]imagev1.ImageRef{"app": {Name: image, Tag: "1.0.0"}}))
	g.Expect(srv.Pushes("app")).To(BeZero())

	push(t, image, nil, "1.1.0")
	_, err := request.Reconcile(ctx, k8s, newRepository(ns, "app", image), nil, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(auto), auto)).To(Succeed())
		g.Expect(auto.Status.LastPushCommit).NotTo(BeEmpty())
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())

	commit, content := readBranch(t, repo.URL(), "main", "deploy/app.yaml")
	g.Expect(commit.Hash).To(Equal(auto.Status.LastPushCommit))
	g.Expect(content).To(Equal(manifest(ns, image+":1.1.0")))
	g.Expect(commit.AuthorName).To(Equal("Plumb Bot"))
	g.Expect(commit.AuthorEmail).To(Equal("bot@example.com"))
	g.Expect(commit.Message).To(Equal("chore: " + ns + "/app " + image + ":1.0.0->" + image + ":1.1.0"))
	// Outside update.path nothing is written.
	_, other := readBranch(t, repo.URL(), "main", "other/app.yaml")
	g.Expect(other).To(Equal(manifest(ns, image+":1.0.0")))
	g.Expect(auto.Status.ObservedPolicies).To(Equal(map[string]imagev1.ImageRef{"app": {Name: image, Tag: "1.1.0"}}))
	g.Expect(auto.Status.LastPushTime).NotTo(BeNil())

	gitRepo := &sourcev1.GitRepository{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app"}, gitRepo)).To(Succeed())
	g.Expect(gitRepo.Annotations[meta.ReconcileRequestAnnotation]).NotTo(BeEmpty())

	// The push is an event naming the commit, with its message.
	g.Eventually(func(g Gomega) {
		g.Expect(automationEvents(g, ns, meta.SucceededReason)).To(ContainElement(And(
			ContainSubstring("pushed commit '"+auto.Status.LastPushCommit[:7]+"' to branch 'main'"),
			ContainSubstring(commit.Message))))
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
}

// git.push.branch other than the checkout's receives the commit; the
// checkout's branch stays as it was. The sourceRef names Flux's group.
func TestAutomationPushesToASeparateBranch(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, image, _, repo := automationFixture(t, "1.2.0")
	mainHead, err := repo.Head("main")
	g.Expect(err).NotTo(HaveOccurred())

	auto := newAutomation(ns, "app", "app")
	auto.Spec.Git.Push = &imagev1.PushSpec{Branch: "image-updates"}
	// As a manifest ported from Flux names it.
	auto.Spec.SourceRef.APIVersion = "source.toolkit.fluxcd.io/v1"
	g.Expect(k8s.Create(ctx, auto)).To(Succeed())
	auto = waitReady(t, auto, metav1.ConditionTrue, meta.SucceededReason)
	g.Expect(auto.Status.LastPushCommit).NotTo(BeEmpty())

	commit, content := readBranch(t, repo.URL(), "image-updates", "deploy/app.yaml")
	g.Expect(commit.Hash).To(Equal(auto.Status.LastPushCommit))
	g.Expect(content).To(Equal(manifest(ns, image+":1.2.0")))
	g.Expect(repo.Head("main")).To(Equal(mainHead))
}

// A suspended automation clones nothing and pushes nothing.
func TestAutomationSuspendedDoesNothing(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, _, srv, _ := automationFixture(t, "1.2.0")
	fetches := srv.Fetches("app")

	auto := newAutomation(ns, "app", "app")
	auto.Spec.Suspend = true
	g.Expect(k8s.Create(ctx, auto)).To(Succeed())
	auto = waitReady(t, auto, metav1.ConditionFalse, meta.SuspendedReason)
	g.Expect(auto.Status.LastAutomationRunTime).To(BeNil())
	g.Expect(srv.Pushes("app")).To(BeZero())
	g.Expect(srv.Fetches("app")).To(Equal(fetches))
}

// A GitRepository in another namespace is refused under
// --no-cross-namespace-refs, which the suite's manager runs with.
func TestAutomationRefusesACrossNamespaceSource(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, other := namespace(t), namespace(t)
	g.Expect(k8s.Create(ctx, newGitRepository(other, "app", "http://127.0.0.1:1/app.git"))).To(Succeed())
	auto := newAutomation(ns, "app", "app")
	auto.Spec.SourceRef.Namespace = other
	g.Expect(k8s.Create(ctx, auto)).To(Succeed())
	auto = waitReady(t, auto, metav1.ConditionFalse, imagev1.AccessDeniedReason)
	g.Expect(readyOf(auto.Status.Conditions).Message).To(ContainSubstring("cross-namespace references are not allowed"))
}

// A Git URL on an address the policy refuses (a private one; only
// loopback is allowed here) fails before any connection, saying which
// flag would allow it.
func TestAutomationRefusesAnAddressOutsideThePolicy(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t)
	g.Expect(k8s.Create(ctx, newGitRepository(ns, "app", "http://10.255.255.1/app.git"))).To(Succeed())
	msg := failingAutomation(t, ns, "app", sourcev1.GitOperationFailedReason)
	g.Expect(msg).To(ContainSubstring("10.255.255.1 refused"))
	g.Expect(strings.Contains(msg, "--allowed-private-networks")).To(BeTrue(), msg)
}

// With git.commit.signingKey the pushed commit is signed by the Secret's
// OpenPGP key.
func TestAutomationSignsItsCommit(t *testing.T) {
	g := NewWithT(t)
	ns, _, _, repo := automationFixture(t, "1.3.0")

	key, err := testgit.NewSigningKey("bot")
	g.Expect(err).NotTo(HaveOccurred())
	var armored bytes.Buffer
	w, err := armor.Encode(&armored, openpgp.PrivateKeyType, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(key.Entity.SerializePrivate(w, nil)).To(Succeed())
	g.Expect(w.Close()).To(Succeed())
	auto := signedAutomation(t, ns, "signing", "", map[string][]byte{"git.asc": armored.Bytes()})
	auto = waitReady(t, auto, metav1.ConditionTrue, meta.SucceededReason)
	g.Expect(auto.Status.LastPushCommit).NotTo(BeEmpty())

	c := readCommit(t, repo.URL(), "main")
	g.Expect(c.Hash.String()).To(Equal(auto.Status.LastPushCommit))
	g.Expect(c.PGPSignature).NotTo(BeEmpty())
	signer, err := c.Verify(key.Public)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(signer.PrimaryKey.Fingerprint).To(Equal(key.Entity.PrimaryKey.Fingerprint))
}

// readCommit returns the commit at branch's head of url.
func readCommit(t *testing.T, url, branch string) *object.Commit {
	t.Helper()
	conn, err := gitreach.Reach(context.Background(), url, gitreach.Options{Addresses: testAddresses})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Done()
	repo, err := git.CloneContext(conn.Ctx, memory.NewStorage(), nil, &git.CloneOptions{
		URL: conn.URL, ReferenceName: plumbing.NewBranchReferenceName(branch), SingleBranch: true, Depth: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	head, err := repo.Head()
	if err != nil {
		t.Fatal(err)
	}
	c, err := repo.CommitObject(head.Hash())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// What only a change of the spec fixes stalls the automation, before any
// connection: a message template that does not parse, and a
// GitRepository checked out by a semver range with no git.checkout.ref.
func TestAutomationStallsOnASpecThatCannotWork(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t)
	g.Expect(k8s.Create(ctx, newGitRepository(ns, "app", "http://127.0.0.1:1/app.git"))).To(Succeed())
	semver := newGitRepository(ns, "semver", "http://127.0.0.1:1/app.git")
	semver.Spec.Reference = &sourcev1.GitRepositoryRef{SemVer: "^1"}
	g.Expect(k8s.Create(ctx, semver)).To(Succeed())

	tmpl := newAutomation(ns, "template", "app")
	tmpl.Spec.Git.Commit.MessageTemplate = "{{ .Changed.Changes"
	g.Expect(k8s.Create(ctx, tmpl)).To(Succeed())
	tmpl = waitReady(t, tmpl, metav1.ConditionFalse, imagev1.InvalidSourceConfigReason)
	g.Expect(readyOf(tmpl.Status.Conditions).Message).To(ContainSubstring("spec.git.commit.messageTemplate"))

	byRange := newAutomation(ns, "semver", "semver")
	g.Expect(k8s.Create(ctx, byRange)).To(Succeed())
	byRange = waitReady(t, byRange, metav1.ConditionFalse, imagev1.InvalidSourceConfigReason)
	g.Expect(readyOf(byRange.Status.Conditions).Message).To(ContainSubstring("set spec.git.checkout.ref"))
}

// The automation clones and pushes with its GitRepository's Secret: a
// server that wants credentials gets them, and without the Secret the
// run fails and nothing is pushed.
func TestAutomationPushesWithTheGitRepositorysCredentials(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, image := policyFixture(t, "1.2.0")
	srv, repo := gitServerWith(t, testgit.Options{Username: "bot", Password: "s3cret"}, testgit.Files{"deploy/app.yaml": manifest(ns, image+":1.0.0")})

	// Without credentials: refused, nothing pushed.
	g.Expect(k8s.Create(ctx, newGitRepository(ns, "anonymous", repo.URL()))).To(Succeed())
	g.Expect(failingAutomation(t, ns, "anonymous", sourcev1.AuthenticationFailedReason)).To(ContainSubstring("the credentials were refused"))
	g.Expect(srv.Pushes("app")).To(BeZero())

	gitRepositoryWithSecret(t, ns, "app", repo.URL(), map[string][]byte{"username": []byte("bot"), "password": []byte("s3cret")})
	pushingAutomation(t, ns, "app", repo, manifest(ns, image+":1.2.0"))
}
