package controller

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/events"
	"plumb.dev/pkg/testgit"
)

func TestReferencesProduceTheirRevision(t *testing.T) {
	g := NewWithT(t)
	repo := repoFor(t)
	c1, err := repo.Commit("master", "one", testgit.Files{"app/cm.yaml": "v: 1"})
	g.Expect(err).NotTo(HaveOccurred())
	c2, err := repo.Commit("main", "two", testgit.Files{"app/cm.yaml": "v: 2"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(repo.Tag("v1.0.0", c1, "release 1.0.0")).To(Succeed())
	g.Expect(repo.Tag("v1.2.0", c2, "")).To(Succeed())
	g.Expect(repo.Tag("v2.0.0-rc.1", c2, "")).To(Succeed())
	g.Expect(repo.SetRef("refs/pull/3/head", c2)).To(Succeed())
	ns := namespace(t)
	secret := basicAuth(t, ns)

	tests := []struct {
		name     string
		ref      *sourcev1.GitRepositoryRef
		revision string
		content  string
	}{
		{name: "default-branch", revision: "master@sha1:" + c1, content: "v: 1"},
		{name: "branch", ref: &sourcev1.GitRepositoryRef{Branch: "main"}, revision: "main@sha1:" + c2, content: "v: 2"},
		{name: "tag", ref: &sourcev1.GitRepositoryRef{Tag: "v1.0.0"}, revision: "v1.0.0@sha1:" + c1, content: "v: 1"},
		{name: "semver", ref: &sourcev1.GitRepositoryRef{SemVer: "1.x"}, revision: "v1.2.0@sha1:" + c2, content: "v: 2"},
		{name: "semver-exact", ref: &sourcev1.GitRepositoryRef{SemVer: "=1.0.0"}, revision: "v1.0.0@sha1:" + c1, content: "v: 1"},
		{name: "name", ref: &sourcev1.GitRepositoryRef{Name: "refs/pull/3/head"}, revision: "refs/pull/3/head@sha1:" + c2, content: "v: 2"},
		{name: "commit", ref: &sourcev1.GitRepositoryRef{Commit: c1}, revision: "sha1:" + c1, content: "v: 1"},
		{name: "commit-on-branch", ref: &sourcev1.GitRepositoryRef{Branch: "main", Commit: c1}, revision: "main@sha1:" + c1, content: "v: 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			obj := newGitRepository(ns, tt.name, repo.URL(), secret, tt.ref)
			g.Expect(k8s.Create(context.Background(), obj)).To(Succeed())
			obj = waitReady(t, keyOf(obj), tt.revision)

			a := obj.Status.Artifact
			commit := tt.revision[strings.LastIndex(tt.revision, ":")+1:]
			g.Expect(a.Path).To(Equal("gitrepository/" + ns + "/" + tt.name + "/" + commit + ".tar.gz"))
			g.Expect(a.Digest).To(MatchRegexp(`^sha256:[a-f0-9]{64}$`))
			g.Expect(files(t, download(t, a))).To(HaveKeyWithValue("app/cm.yaml", tt.content))
			g.Expect(obj.Finalizers).To(ContainElement(Finalizer))
			g.Expect(condition(obj, sourcev1.ArtifactInStorageCondition).Status).To(Equal(metav1.ConditionTrue))
			g.Expect(condition(obj, sourcev1.FetchFailedCondition)).To(BeNil())
			g.Expect(condition(obj, meta.ReconcilingCondition)).To(BeNil())
			g.Expect(condition(obj, meta.StalledCondition)).To(BeNil())
		})
	}
}

func TestNewCommitNewArtifactUnchangedRemoteNoRepack(t *testing.T) {
	g := NewWithT(t)
	repo := repoFor(t)
	c1, err := repo.Commit("main", "one", testgit.Files{"cm.yaml": "v: 1"})
	g.Expect(err).NotTo(HaveOccurred())
	ns := namespace(t)
	obj := newGitRepository(ns, "app", repo.URL(), basicAuth(t, ns), &sourcev1.GitRepositoryRef{Branch: "main"})
	g.Expect(k8s.Create(context.Background(), obj)).To(Succeed())
	key := keyOf(obj)
	obj = waitReady(t, key, "main@sha1:"+c1)
	first := obj.Status.Artifact.DeepCopy()
	download(t, first)

	// Unchanged remote: a reconcile lists the references but neither clones
	// nor repacks.
	fetches, lists := repo.Fetches(), gitSrv.Lists(repo.Name())
	stat, err := os.Stat(storage.LocalPath(first.Path))
	g.Expect(err).NotTo(HaveOccurred())
	obj = requestReconcile(t, key, "first")
	g.Expect(repo.Fetches()).To(Equal(fetches), "no clone of an unchanged remote")
	g.Expect(gitSrv.Lists(repo.Name())).To(BeNumerically(">", lists), "the remote head was asked for")
	again, err := os.Stat(storage.LocalPath(first.Path))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again.ModTime()).To(Equal(stat.ModTime()), "no repack")
	g.Expect(obj.Status.Artifact).To(Equal(first))
	g.Expect(condition(obj, meta.ReadyCondition).Status).To(Equal(metav1.ConditionTrue))

	// A new commit gives a new artifact, downloaded and checked.
	c2, err := repo.Commit("main", "two", testgit.Files{"cm.yaml": "v: 2"})
	g.Expect(err).NotTo(HaveOccurred())
	requestReconcile(t, key, "second")
	obj = waitReady(t, key, "main@sha1:"+c2)
	g.Expect(obj.Status.Artifact.Path).To(HaveSuffix(c2 + ".tar.gz"))
	g.Expect(obj.Status.Artifact.Digest).NotTo(Equal(first.Digest))
	g.Expect(files(t, download(t, obj.Status.Artifact))).To(HaveKeyWithValue("cm.yaml", "v: 2"))
	g.Expect(repo.Fetches()).To(Equal(fetches + 1))

	// The stream carries a NewArtifact event per revision.
	evs := streamEvents(t, events.Subject(sourcev1.GitRepositoryKind, ns, "app"), 2)
	g.Expect(evs[0].Reason).To(Equal(sourcev1.NewArtifactReason))
	g.Expect(evs[0].Revision).To(Equal("main@sha1:" + c1))
	g.Expect(evs[1].Reason).To(Equal(sourcev1.NewArtifactReason))
	g.Expect(evs[1].Revision).To(Equal("main@sha1:" + c2))
	g.Expect(evs[1].Severity).To(Equal(events.SeverityInfo))
	g.Expect(evs[1].InvolvedObject).To(Equal(events.ObjectReference{
		APIVersion: sourcev1.GroupVersion.String(), Kind: sourcev1.GitRepositoryKind, Namespace: ns, Name: "app", UID: string(obj.UID),
	}))
	g.Expect(evs[1].Metadata).To(HaveKeyWithValue("digest", obj.Status.Artifact.Digest))
	g.Expect(evs[1].ReportingController).To(Equal(ControllerName))

	// Kubernetes Events too.
	g.Eventually(func(g Gomega) {
		var list corev1.EventList
		g.Expect(k8s.List(context.Background(), &list, client.InNamespace(ns))).To(Succeed())
		var reasons []string
		for _, e := range list.Items {
			reasons = append(reasons, e.Reason)
		}
		g.Expect(reasons).To(ContainElement(sourcev1.NewArtifactReason))
	}, timeout, poll).Should(Succeed())

	// Retention keeps the newest two artifacts.
	c3, err := repo.Commit("main", "three", testgit.Files{"cm.yaml": "v: 3"})
	g.Expect(err).NotTo(HaveOccurred())
	requestReconcile(t, key, "third")
	obj = waitReady(t, key, "main@sha1:"+c3)
	g.Eventually(func(g Gomega) {
		entries, err := os.ReadDir(filepath.Dir(storage.LocalPath(obj.Status.Artifact.Path)))
		g.Expect(err).NotTo(HaveOccurred())
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		g.Expect(names).To(ConsistOf(c2+".tar.gz", c3+".tar.gz"))
	}, timeout, poll).Should(Succeed())

	// Metrics.
	g.Expect(gauge(t, "plumb_source_ready", ns, "app")).To(Equal(1.0))
	g.Expect(gauge(t, "plumb_source_artifact_size_bytes", ns, "app")).To(Equal(float64(*obj.Status.Artifact.Size)))
	g.Expect(gauge(t, "plumb_source_suspended", ns, "app")).To(Equal(0.0))
	// And Flux's, kind="GitRepository".
	g.Expect(fluxCondition(t, sourcev1.GitRepositoryKind, ns, "app")).To(Equal(map[string]float64{
		"True": 1, "False": 0, "Unknown": 0, "Deleted": 0,
	}))
	g.Expect(gauge(t, "gotk_suspend_status", ns, "app")).To(Equal(0.0))
}

func TestFailuresKeepThePreviousArtifact(t *testing.T) {
	g := NewWithT(t)
	repo := repoFor(t)
	c1, err := repo.Commit("main", "one", testgit.Files{"cm.yaml": "v: 1"})
	g.Expect(err).NotTo(HaveOccurred())
	ns := namespace(t)
	secret := basicAuth(t, ns)
	credentials(t, ns, "wrong", map[string]string{"username": gitUser, "password": "guess"})

	tests := []struct {
		name    string
		break_  func(*sourcev1.GitRepository)
		reason  string
		message string
		stalled bool
	}{
		{
			name:    "wrong-password",
			break_:  func(o *sourcev1.GitRepository) { o.Spec.SecretRef = &meta.LocalObjectReference{Name: "wrong"} },
			reason:  sourcev1.AuthenticationFailedReason,
			message: "the credentials were refused",
		},
		{
			name:    "missing-secret",
			break_:  func(o *sourcev1.GitRepository) { o.Spec.SecretRef = &meta.LocalObjectReference{Name: "absent"} },
			reason:  sourcev1.AuthenticationFailedReason,
			message: "spec.secretRef: Secret " + ns + "/absent not found",
		},
		{
			name:    "missing-branch",
			break_:  func(o *sourcev1.GitRepository) { o.Spec.Reference = &sourcev1.GitRepositoryRef{Branch: "gone"} },
			reason:  sourcev1.ReferenceNotFoundReason,
			message: `branch "gone" not found in the remote repository`,
		},
		{
			name:    "unreachable-host",
			break_:  func(o *sourcev1.GitRepository) { o.Spec.URL = "http://127.0.0.1:1/app.git" },
			reason:  sourcev1.GitOperationFailedReason,
			message: "cannot reach the server",
		},
		{
			name: "invalid-semver",
			break_: func(o *sourcev1.GitRepository) {
				o.Spec.Reference = &sourcev1.GitRepositoryRef{SemVer: "~> one point oh"}
			},
			reason:  meta.InvalidSpecReason,
			message: `spec.ref.semver "~> one point oh" is not a valid semver range`,
			stalled: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			obj := newGitRepository(ns, tt.name, repo.URL(), secret, &sourcev1.GitRepositoryRef{Branch: "main"})
			g.Expect(k8s.Create(context.Background(), obj)).To(Succeed())
			key := keyOf(obj)
			good := waitReady(t, key, "main@sha1:"+c1).Status.Artifact

			obj = get(g, key)
			patch := client.MergeFrom(obj.DeepCopy())
			tt.break_(obj)
			g.Expect(k8s.Patch(context.Background(), obj, patch)).To(Succeed())
			obj = waitFailed(t, key, tt.reason)

			ready := condition(obj, meta.ReadyCondition)
			g.Expect(ready.Message).To(ContainSubstring(tt.message))
			fetch := condition(obj, sourcev1.FetchFailedCondition)
			g.Expect(fetch).NotTo(BeNil())
			g.Expect(fetch.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(fetch.Reason).To(Equal(tt.reason))
			if tt.stalled {
				g.Expect(condition(obj, meta.StalledCondition).Status).To(Equal(metav1.ConditionTrue))
				g.Expect(condition(obj, meta.ReconcilingCondition)).To(BeNil())
				g.Expect(obj.Status.ObservedGeneration).To(Equal(obj.Generation))
			} else {
				g.Expect(condition(obj, meta.ReconcilingCondition).Reason).To(Equal(meta.ProgressingWithRetryReason))
				g.Expect(condition(obj, meta.StalledCondition)).To(BeNil())
			}

			// The previous artifact is still in status and still served.
			g.Expect(obj.Status.Artifact).To(Equal(good))
			g.Expect(files(t, download(t, obj.Status.Artifact))).To(HaveKeyWithValue("cm.yaml", "v: 1"))

			// Failures reach the stream as errors with Ready's reason.
			evs := streamEvents(t, events.Subject(sourcev1.GitRepositoryKind, ns, tt.name), 2)
			g.Expect(evs[1].Reason).To(Equal(tt.reason))
			g.Expect(evs[1].Severity).To(Equal(events.SeverityError))
			g.Expect(evs[1].Message).To(ContainSubstring(tt.message))

			// Fixing the spec makes it Ready again.
			obj = get(g, key)
			patch = client.MergeFrom(obj.DeepCopy())
			obj.Spec.URL = repo.URL()
			obj.Spec.SecretRef = secret
			obj.Spec.Reference = &sourcev1.GitRepositoryRef{Branch: "main"}
			g.Expect(k8s.Patch(context.Background(), obj, patch)).To(Succeed())
			obj = waitReady(t, key, "main@sha1:"+c1)
			g.Expect(condition(obj, sourcev1.FetchFailedCondition)).To(BeNil())
			g.Expect(condition(obj, meta.StalledCondition)).To(BeNil())
		})
	}
}

func TestRepositoryOverTheSizeLimitIsRefusedAndThePreviousArtifactKept(t *testing.T) {
	noise := make([]byte, 2*maxRepositorySize)
	if _, err := rand.Read(noise); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		content string
	}{
		// Random bytes do not compress: the fetch itself passes the limit.
		{name: "objects", content: string(noise)},
		// Zeros pack to almost nothing: the checked-out tree passes it.
		{name: "tree", content: strings.Repeat("\x00", 2*maxRepositorySize)},
	}
	ns := namespace(t)
	secret := basicAuth(t, ns)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			repo := repoFor(t)
			c1, err := repo.Commit("main", "small", testgit.Files{"cm.yaml": "v: 1"})
			g.Expect(err).NotTo(HaveOccurred())
			obj := newGitRepository(ns, tt.name, repo.URL(), secret, &sourcev1.GitRepositoryRef{Branch: "main"})
			g.Expect(k8s.Create(context.Background(), obj)).To(Succeed())
			key := keyOf(obj)
			good := waitReady(t, key, "main@sha1:"+c1).Status.Artifact

			c2, err := repo.Commit("main", "large", testgit.Files{"big.bin": tt.content})
			g.Expect(err).NotTo(HaveOccurred())
			requestReconcile(t, key, "large")
			obj = waitFailed(t, key, sourcev1.RepositoryTooLargeReason)

			message := fmt.Sprintf("fetching and checking out main@sha1:%s passes the limit of %d bytes on disk per repository (--max-repository-size)",
				c2, maxRepositorySize)
			g.Expect(condition(obj, meta.ReadyCondition).Message).To(Equal(message))
			fetch := condition(obj, sourcev1.FetchFailedCondition)
			g.Expect(fetch.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(fetch.Reason).To(Equal(sourcev1.RepositoryTooLargeReason))
			// Retrying the same commit cannot help: stalled, not retried
			// with backoff.
			g.Expect(condition(obj, meta.StalledCondition).Reason).To(Equal(sourcev1.RepositoryTooLargeReason))
			g.Expect(condition(obj, meta.ReconcilingCondition)).To(BeNil())

			// The previous artifact is still in status and still served.
			g.Expect(obj.Status.Artifact).To(Equal(good))
			g.Expect(files(t, download(t, obj.Status.Artifact))).To(Equal(map[string]string{"cm.yaml": "v: 1"}))

			// The refusal reaches the stream once, as a RepositoryTooLarge error.
			evs := streamEvents(t, events.Subject(sourcev1.GitRepositoryKind, ns, tt.name), 2)
			g.Expect(evs[1].Reason).To(Equal(sourcev1.RepositoryTooLargeReason))
			g.Expect(evs[1].Severity).To(Equal(events.SeverityError))
			g.Expect(evs[1].Message).To(Equal(message))

			// Asked again, the refused commit is not downloaded again.
			fetches := repo.Fetches()
			obj = requestReconcile(t, key, "again")
			g.Expect(repo.Fetches()).To(Equal(fetches))
			g.Expect(condition(obj, meta.ReadyCondition).Message).To(Equal(message))

			// A commit that removes the large file is fetched and packed.
			c3, err := repo.Commit("main", "smaller", testgit.Files{"big.bin": testgit.Delete, "cm.yaml": "v: 3"})
			g.Expect(err).NotTo(HaveOccurred())
			requestReconcile(t, key, "smaller")
			obj = waitReady(t, key, "main@sha1:"+c3)
			g.Expect(files(t, download(t, obj.Status.Artifact))).To(Equal(map[string]string{"cm.yaml": "v: 3"}))
			g.Expect(condition(obj, sourcev1.FetchFailedCondition)).To(BeNil())
			g.Expect(condition(obj, meta.StalledCondition)).To(BeNil())
		})
	}
}

func TestSameTreeSameDigestAndIgnoreRules(t *testing.T) {
	g := NewWithT(t)
	repo := repoFor(t)
	c1, err := repo.Commit("main", "one", testgit.Files{
		".sourceignore":   "secrets/\n*.md\n",
		"deploy/app.yaml": "kind: ConfigMap",
		"secrets/key.pem": "private",
		"README.md":       "docs",
		"logo.png":        "png",
	})
	g.Expect(err).NotTo(HaveOccurred())
	ns := namespace(t)
	obj := newGitRepository(ns, "app", repo.URL(), basicAuth(t, ns), &sourcev1.GitRepositoryRef{Branch: "main"})
	g.Expect(k8s.Create(context.Background(), obj)).To(Succeed())
	key := keyOf(obj)
	first := waitReady(t, key, "main@sha1:"+c1).Status.Artifact
	g.Expect(files(t, download(t, first))).To(Equal(map[string]string{
		".sourceignore": "secrets/\n*.md\n", "deploy/app.yaml": "kind: ConfigMap",
	}))

	// Another commit with the same tree packs to the same bytes.
	c2, err := repo.Commit("main", "empty", nil)
	g.Expect(err).NotTo(HaveOccurred())
	requestReconcile(t, key, "1")
	second := waitReady(t, key, "main@sha1:"+c2).Status.Artifact
	g.Expect(second.Path).NotTo(Equal(first.Path))
	g.Expect(second.Digest).To(Equal(first.Digest))

	// spec.ignore is applied on top (and replaces the default list, so the
	// png comes back), with a rebuild of the same commit.
	obj = get(g, key)
	patch := client.MergeFrom(obj.DeepCopy())
	obj.Spec.Ignore = ptr("deploy/\n")
	g.Expect(k8s.Patch(context.Background(), obj, patch)).To(Succeed())
	third := waitReady(t, key, "main@sha1:"+c2).Status.Artifact
	g.Expect(files(t, download(t, third))).To(Equal(map[string]string{".sourceignore": "secrets/\n*.md\n", "logo.png": "png"}))
	g.Expect(third.Digest).NotTo(Equal(second.Digest))

	// NewArtifact is announced per commit: the repack of c2 for spec.ignore
	// is not, so the next commit's event follows c2's in the stream (the
	// recorder publishes in order).
	c3, err := repo.Commit("main", "three", testgit.Files{"more.yaml": "kind: ConfigMap"})
	g.Expect(err).NotTo(HaveOccurred())
	requestReconcile(t, key, "2")
	waitReady(t, key, "main@sha1:"+c3)
	evs := streamEvents(t, events.Subject(sourcev1.GitRepositoryKind, ns, "app"), 3)
	for i, c := range []string{c1, c2, c3} {
		g.Expect(evs[i].Reason).To(Equal(sourcev1.NewArtifactReason), "event %d", i)
		g.Expect(evs[i].Revision).To(Equal("main@sha1:"+c), "event %d", i)
	}
}

func TestTamperedArtifactIsRebuilt(t *testing.T) {
	g := NewWithT(t)
	repo := repoFor(t)
	c1, err := repo.Commit("main", "one", testgit.Files{"cm.yaml": "v: 1"})
	g.Expect(err).NotTo(HaveOccurred())
	ns := namespace(t)
	obj := newGitRepository(ns, "app", repo.URL(), basicAuth(t, ns), &sourcev1.GitRepositoryRef{Branch: "main"})
	g.Expect(k8s.Create(context.Background(), obj)).To(Succeed())
	key := keyOf(obj)
	good := waitReady(t, key, "main@sha1:"+c1).Status.Artifact

	for i, tamper := range []func(string) error{
		func(p string) error { return os.WriteFile(p, []byte("evil"), 0o644) },
		os.Remove,
	} {
		g.Expect(tamper(storage.LocalPath(good.Path))).To(Succeed())
		fetches := repo.Fetches()
		obj = requestReconcile(t, key, "tamper-"+string(rune('a'+i)))
		g.Expect(storage.Verify(good)).To(Succeed(), "the artifact was rebuilt with its digest")
		g.Expect(obj.Status.Artifact.Digest).To(Equal(good.Digest))
		g.Expect(condition(obj, sourcev1.ArtifactInStorageCondition).Status).To(Equal(metav1.ConditionTrue))
		g.Expect(repo.Fetches()).To(Equal(fetches + 1))
		download(t, obj.Status.Artifact)
	}
}

func TestSSHKnownHosts(t *testing.T) {
	g := NewWithT(t)
	// A server of its own, so the host key is this test's.
	sshSrv, err := testgit.NewServer(testgit.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	defer sshSrv.Close()
	sshRepo, err := sshSrv.CreateRepo("app")
	g.Expect(err).NotTo(HaveOccurred())
	c1, err := sshRepo.Commit("main", "one", testgit.Files{"cm.yaml": "v: 1"})
	g.Expect(err).NotTo(HaveOccurred())
	identity, clientKey, err := testgit.NewKey()
	g.Expect(err).NotTo(HaveOccurred())
	known, err := sshSrv.StartSSH(testgit.SSHOptions{AuthorizedKeys: []ssh.PublicKey{clientKey.PublicKey()}})
	g.Expect(err).NotTo(HaveOccurred())
	_, otherHost, err := testgit.NewKey()
	g.Expect(err).NotTo(HaveOccurred())
	wrong := knownhosts.Line([]string{knownhosts.Normalize(sshSrv.SSHAddress())}, otherHost.PublicKey())

	ns := namespace(t)
	credentials(t, ns, "right", map[string]string{"identity": string(identity), "known_hosts": known})
	credentials(t, ns, "wrong", map[string]string{"identity": string(identity), "known_hosts": wrong})

	right := newGitRepository(ns, "right", sshRepo.SSHURL(), &meta.LocalObjectReference{Name: "right"}, &sourcev1.GitRepositoryRef{Branch: "main"})
	g.Expect(k8s.Create(context.Background(), right)).To(Succeed())
	bad := newGitRepository(ns, "wrong", sshRepo.SSHURL(), &meta.LocalObjectReference{Name: "wrong"}, &sourcev1.GitRepositoryRef{Branch: "main"})
	g.Expect(k8s.Create(context.Background(), bad)).To(Succeed())

	obj := waitReady(t, keyOf(right), "main@sha1:"+c1)
	g.Expect(files(t, download(t, obj.Status.Artifact))).To(HaveKeyWithValue("cm.yaml", "v: 1"))
	obj = waitFailed(t, keyOf(bad), sourcev1.AuthenticationFailedReason)
	g.Expect(condition(obj, meta.ReadyCondition).Message).To(ContainSubstring("host key"))
	g.Expect(obj.Status.Artifact).To(BeNil())
}

func TestDeletionRemovesTheArtifacts(t *testing.T) {
	g := NewWithT(t)
	repo := repoFor(t)
	c1, err := repo.Commit("main", "one", testgit.Files{"cm.yaml": "v: 1"})
	g.Expect(err).NotTo(HaveOccurred())
	ns := namespace(t)
	obj := newGitRepository(ns, "app", repo.URL(), basicAuth(t, ns), &sourcev1.GitRepositoryRef{Branch: "main"})
	g.Expect(k8s.Create(context.Background(), obj)).To(Succeed())
	key := keyOf(obj)
	obj = waitReady(t, key, "main@sha1:"+c1)
	folder := filepath.Dir(storage.LocalPath(obj.Status.Artifact.Path))
	g.Expect(folder).To(BeADirectory())

	g.Expect(k8s.Delete(context.Background(), obj)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(k8s.Get(context.Background(), key, &sourcev1.GitRepository{}))
	}, timeout, poll).Should(BeTrue())
	_, err = os.Stat(folder)
	g.Expect(err).To(MatchError(os.ErrNotExist), "the artifact folder is removed")
	resp, err := httpGet(obj.Status.Artifact.URL)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(resp).To(Equal(404))
}

func TestSuspendStopsAllWork(t *testing.T) {
	g := NewWithT(t)
	repo := repoFor(t)
	c1, err := repo.Commit("main", "one", testgit.Files{"cm.yaml": "v: 1"})
	g.Expect(err).NotTo(HaveOccurred())
	ns := namespace(t)
	obj := newGitRepository(ns, "app", repo.URL(), basicAuth(t, ns), &sourcev1.GitRepositoryRef{Branch: "main"})
	g.Expect(k8s.Create(context.Background(), obj)).To(Succeed())
	key := keyOf(obj)
	waitReady(t, key, "main@sha1:"+c1)

	obj = get(g, key)
	patch := client.MergeFrom(obj.DeepCopy())
	obj.Spec.Suspend = true
	g.Expect(k8s.Patch(context.Background(), obj, patch)).To(Succeed())
	g.Eventually(func() float64 { return gauge(t, "plumb_source_suspended", ns, "app") }, timeout, poll).Should(Equal(1.0))

	_, err = repo.Commit("main", "two", testgit.Files{"cm.yaml": "v: 2"})
	g.Expect(err).NotTo(HaveOccurred())
	lists := gitSrv.Lists(repo.Name())
	obj = get(g, key)
	patch = client.MergeFrom(obj.DeepCopy())
	obj.Annotations = map[string]string{meta.ReconcileRequestAnnotation: "while-suspended"}
	g.Expect(k8s.Patch(context.Background(), obj, patch)).To(Succeed())
	// A suspended object does not even ask the remote, and leaves the
	// request unhandled.
	g.Consistently(func(g Gomega) {
		g.Expect(gitSrv.Lists(repo.Name())).To(Equal(lists))
		g.Expect(get(g, key).Status.LastHandledReconcileAt).NotTo(Equal("while-suspended"))
	}, 2*time.Second, poll).Should(Succeed())

	// Resuming brings the new commit and handles the pending request.
	obj = get(g, key)
	patch = client.MergeFrom(obj.DeepCopy())
	obj.Spec.Suspend = false
	g.Expect(k8s.Patch(context.Background(), obj, patch)).To(Succeed())
	head, err := repo.Head("main")
	g.Expect(err).NotTo(HaveOccurred())
	obj = waitReady(t, key, "main@sha1:"+head)
	g.Expect(obj.Status.LastHandledReconcileAt).To(Equal("while-suspended"))
}

// --- helpers of this file ---

func ptr[T any](v T) *T { return &v }

func httpGet(url string) (int, error) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// streamEvents reads the first n events of a subject from the JetStream
// stream, as the notification-controller would.
func streamEvents(t *testing.T, subject string, n int) []*events.Event {
	t.Helper()
	g := NewWithT(t)
	nc, err := nats.Connect(env.NATSURL)
	g.Expect(err).NotTo(HaveOccurred())
	defer nc.Close()
	js, err := jetstream.New(nc)
	g.Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var out []*events.Event
	g.Eventually(func(g Gomega) {
		out = nil
		cons, err := js.OrderedConsumer(ctx, natsOpt.Stream, jetstream.OrderedConsumerConfig{FilterSubjects: []string{subject}})
		g.Expect(err).NotTo(HaveOccurred())
		batch, err := cons.Fetch(n, jetstream.FetchMaxWait(2*time.Second))
		g.Expect(err).NotTo(HaveOccurred())
		for msg := range batch.Messages() {
			e, err := events.Decode(msg.Data())
			g.Expect(err).NotTo(HaveOccurred())
			out = append(out, e)
		}
		g.Expect(out).To(HaveLen(n))
	}, timeout, poll).Should(Succeed())
	return out
}

// gauge reads one series of a gauge from controller-runtime's registry.
func gauge(t *testing.T, name, ns, obj string) float64 {
	t.Helper()
	mfs, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.Metric {
			if labels(m)["namespace"] == ns && labels(m)["name"] == obj {
				return m.GetGauge().GetValue()
			}
		}
	}
	return -100
}

func labels(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.Label {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

// Publishing never blocks a reconcile: with NATS down the object still gets
// Ready, and the queued event reaches the stream once NATS is back.
func TestReconcileWhileNATSIsDown(t *testing.T) {
	g := NewWithT(t)
	repo := repoFor(t)
	c1, err := repo.Commit("main", "one", testgit.Files{"cm.yaml": "v: 1"})
	g.Expect(err).NotTo(HaveOccurred())
	ns := namespace(t)

	env.StopNATS()
	restarted := false
	defer func() {
		if !restarted {
			_ = env.RestartNATS()
		}
	}()
	obj := newGitRepository(ns, "app", repo.URL(), basicAuth(t, ns), &sourcev1.GitRepositoryRef{Branch: "main"})
	g.Expect(k8s.Create(context.Background(), obj)).To(Succeed())
	waitReady(t, keyOf(obj), "main@sha1:"+c1)

	g.Expect(env.RestartNATS()).To(Succeed())
	restarted = true
	evs := streamEvents(t, events.Subject(sourcev1.GitRepositoryKind, ns, "app"), 1)
	g.Expect(evs[0].Reason).To(Equal(sourcev1.NewArtifactReason))
	g.Expect(evs[0].Revision).To(Equal("main@sha1:" + c1))
}
