package controller

import (
	"context"
	"strings"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/events"
	"plumb.dev/pkg/testgit"
)

func newSigningKey(t *testing.T, name string) testgit.SigningKey {
	t.Helper()
	k, err := testgit.NewSigningKey(name)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// commitAs commits on branch, signed by key (nil: unsigned).
func commitAs(t *testing.T, repo *testgit.Repo, key *openpgp.Entity, branch, msg string, files testgit.Files) string {
	t.Helper()
	repo.SignWith(key)
	defer repo.SignWith(nil)
	return mustCommit(t, repo, branch, msg, files)
}

func mustCommit(t *testing.T, repo *testgit.Repo, branch, msg string, files testgit.Files) string {
	t.Helper()
	c, err := repo.Commit(branch, msg, files)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// tagAs tags rev, annotated and signed by key (nil: unsigned), or
// lightweight when msg is empty.
func tagAs(t *testing.T, repo *testgit.Repo, key *openpgp.Entity, name, rev, msg string) {
	t.Helper()
	repo.SignWith(key)
	defer repo.SignWith(nil)
	if err := repo.Tag(name, rev, msg); err != nil {
		t.Fatal(err)
	}
}

func verifying(obj *sourcev1.GitRepository, mode sourcev1.GitVerificationMode, secret string) *sourcev1.GitRepository {
	obj.Spec.Verification = &sourcev1.GitRepositoryVerification{Mode: mode, SecretRef: meta.LocalObjectReference{Name: secret}}
	return obj
}

func TestSignaturesDecideWhetherARevisionBecomesAnArtifact(t *testing.T) {
	trusted, stranger := newSigningKey(t, "trusted"), newSigningKey(t, "stranger")
	repo := repoFor(t)
	commitAs(t, repo, trusted.Entity, "main", "init", testgit.Files{"cm.yaml": "v: 0"})
	signed := commitAs(t, repo, trusted.Entity, "signed", "signed", testgit.Files{"cm.yaml": "v: signed"})
	unsigned := commitAs(t, repo, nil, "unsigned", "unsigned", testgit.Files{"cm.yaml": "v: unsigned"})
	foreign := commitAs(t, repo, stranger.Entity, "foreign", "foreign", testgit.Files{"cm.yaml": "v: foreign"})
	tagAs(t, repo, trusted.Entity, "v1.0.0", unsigned, "signed tag, unsigned commit")
	tagAs(t, repo, trusted.Entity, "v2.0.0", signed, "signed tag, signed commit")
	tagAs(t, repo, nil, "v3.0.0", signed, "")
	tagAs(t, repo, nil, "v4.0.0", signed, "unsigned tag")
	tagAs(t, repo, stranger.Entity, "v5.0.0", signed, "tag by a stranger")
	ns := namespace(t)
	secret := basicAuth(t, ns)
	credentials(t, ns, "trusted-keys", map[string]string{"trusted.asc": trusted.Public})

	tests := []struct {
		name string
		mode sourcev1.GitVerificationMode
		ref  sourcev1.GitRepositoryRef
		// revision is the artifact's when verified; "" when refused.
		revision string
		verified string // SourceVerified=True's message
		reason   string // Ready's and SourceVerified's reason when refused
		message  string
		stalled  bool
	}{
		{
			name: "head-signed", mode: sourcev1.ModeGitHEAD, ref: sourcev1.GitRepositoryRef{Branch: "signed"},
			revision: "signed@sha1:" + signed,
			verified: "verified signature of commit " + signed + " with key " + trusted.Fingerprint,
		},
		{
			// Flux's older spelling of HEAD.
			name: "legacy-head-signed", mode: "head", ref: sourcev1.GitRepositoryRef{Branch: "signed"},
			revision: "signed@sha1:" + signed,
			verified: "verified signature of commit " + signed + " with key " + trusted.Fingerprint,
		},
		{
			name: "head-unsigned", mode: sourcev1.ModeGitHEAD, ref: sourcev1.GitRepositoryRef{Branch: "unsigned"},
			reason:  sourcev1.InvalidCommitSignatureReason,
			message: "revision unsigned@sha1:" + unsigned + " refused, no artifact made of it: commit " + unsigned + " is not signed",
		},
		{
			name: "head-signed-by-a-stranger", mode: sourcev1.ModeGitHEAD, ref: sourcev1.GitRepositoryRef{Branch: "foreign"},
			reason: sourcev1.InvalidCommitSignatureReason,
			message: "commit " + foreign + " is signed with OpenPGP key " + stranger.Fingerprint +
				", which is not among the keys of spec.verify.secretRef: Secret " + ns + "/trusted-keys",
		},
		{
			// Tag checks the tag only: its commit is unsigned.
			name: "tag-signed", mode: sourcev1.ModeGitTag, ref: sourcev1.GitRepositoryRef{Tag: "v1.0.0"},
			revision: "v1.0.0@sha1:" + unsigned,
			verified: "verified signature of tag v1.0.0 with key " + trusted.Fingerprint,
		},
		{
			name: "tag-by-semver", mode: sourcev1.ModeGitTag, ref: sourcev1.GitRepositoryRef{SemVer: "~2.0"},
			revision: "v2.0.0@sha1:" + signed,
			verified: "verified signature of tag v2.0.0 with key " + trusted.Fingerprint,
		},
		{
			name: "tag-lightweight", mode: sourcev1.ModeGitTag, ref: sourcev1.GitRepositoryRef{Tag: "v3.0.0"},
			reason:  sourcev1.InvalidGitObjectReason,
			message: "tag v3.0.0 is a lightweight tag, which carries no signature",
		},
		{
			name: "tag-unsigned", mode: sourcev1.ModeGitTag, ref: sourcev1.GitRepositoryRef{Tag: "v4.0.0"},
			reason:  sourcev1.InvalidGitObjectReason,
			message: "tag v4.0.0 is not signed",
		},
		{
			name: "tag-signed-by-a-stranger", mode: sourcev1.ModeGitTag, ref: sourcev1.GitRepositoryRef{Tag: "v5.0.0"},
			reason:  sourcev1.InvalidTagSignatureReason,
			message: "tag v5.0.0 is signed with OpenPGP key " + stranger.Fingerprint + ", which is not among the keys",
		},
		{
			name: "tag-and-head-commit-unsigned", mode: sourcev1.ModeGitTagAndHEAD, ref: sourcev1.GitRepositoryRef{Tag: "v1.0.0"},
			reason:  sourcev1.InvalidCommitSignatureReason,
			message: "commit " + unsigned + " is not signed",
		},
		{
			name: "tag-and-head-tag-unsigned", mode: sourcev1.ModeGitTagAndHEAD, ref: sourcev1.GitRepositoryRef{Tag: "v4.0.0"},
			reason:  sourcev1.InvalidGitObjectReason,
			message: "tag v4.0.0 is not signed",
		},
		{
			name: "tag-and-head-both-signed", mode: sourcev1.ModeGitTagAndHEAD, ref: sourcev1.GitRepositoryRef{Name: "refs/tags/v2.0.0"},
			revision: "refs/tags/v2.0.0@sha1:" + signed,
			verified: "verified signature of tag v2.0.0 with key " + trusted.Fingerprint +
				" and of commit " + signed + " with key " + trusted.Fingerprint,
		},
		{
			name: "tag-mode-on-a-branch", mode: sourcev1.ModeGitTag, ref: sourcev1.GitRepositoryRef{Branch: "signed"},
			reason:  sourcev1.InvalidVerificationModeReason,
			message: "spec.verify.mode Tag verifies the tag that spec.ref names, but spec.ref names no tag",
			stalled: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			ref := tt.ref
			obj := verifying(newGitRepository(ns, tt.name, repo.URL(), secret, &ref), tt.mode, "trusted-keys")
			g.Expect(k8s.Create(context.Background(), obj)).To(Succeed())
			key := keyOf(obj)

			if tt.revision != "" {
				obj = waitReady(t, key, tt.revision)
				verified := condition(obj, sourcev1.SourceVerifiedCondition)
				g.Expect(verified).NotTo(BeNil())
				g.Expect(verified.Status).To(Equal(metav1.ConditionTrue))
				g.Expect(verified.Reason).To(Equal(meta.SucceededReason))
				g.Expect(verified.Message).To(Equal(tt.verified))
				return
			}

			obj = waitFailed(t, key, tt.reason)
			g.Expect(condition(obj, meta.ReadyCondition).Message).To(ContainSubstring(tt.message))
			verified := condition(obj, sourcev1.SourceVerifiedCondition)
			g.Expect(verified).NotTo(BeNil())
			g.Expect(verified.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(verified.Reason).To(Equal(tt.reason))
			g.Expect(verified.Message).To(ContainSubstring(tt.message))
			// Nothing was packed of the refused revision.
			g.Expect(obj.Status.Artifact).To(BeNil())
			if tt.stalled {
				g.Expect(condition(obj, meta.StalledCondition).Status).To(Equal(metav1.ConditionTrue))
			} else {
				g.Expect(condition(obj, meta.ReconcilingCondition).Reason).To(Equal(meta.ProgressingWithRetryReason))
			}
			evs := streamEvents(t, events.Subject(sourcev1.GitRepositoryKind, ns, tt.name), 1)
			g.Expect(evs[0].Reason).To(Equal(tt.reason))
			g.Expect(evs[0].Severity).To(Equal(events.SeverityError))
			g.Expect(evs[0].Message).To(ContainSubstring(tt.message))
		})
	}
}

func TestUnsignedCommitIsRefusedAndTheVerifiedArtifactKept(t *testing.T) {
	g := NewWithT(t)
	trusted := newSigningKey(t, "trusted")
	repo := repoFor(t)
	c1 := commitAs(t, repo, trusted.Entity, "main", "one", testgit.Files{"cm.yaml": "v: 1"})
	ns := namespace(t)
	credentials(t, ns, "keys", map[string]string{"trusted.asc": trusted.Public})
	obj := verifying(newGitRepository(ns, "app", repo.URL(), basicAuth(t, ns), &sourcev1.GitRepositoryRef{Branch: "main"}),
		sourcev1.ModeGitHEAD, "keys")
	g.Expect(k8s.Create(context.Background(), obj)).To(Succeed())
	key := keyOf(obj)
	good := waitReady(t, key, "main@sha1:"+c1).Status.Artifact

	// Someone pushes an unsigned commit.
	c2 := commitAs(t, repo, nil, "main", "two", testgit.Files{"cm.yaml": "v: 2"})
	requestReconcile(t, key, "unsigned")
	obj = waitFailed(t, key, sourcev1.InvalidCommitSignatureReason)
	g.Expect(condition(obj, meta.ReadyCondition).Message).To(ContainSubstring("commit " + c2 + " is not signed"))
	g.Expect(condition(obj, sourcev1.SourceVerifiedCondition).Status).To(Equal(metav1.ConditionFalse))
	g.Expect(obj.Status.Artifact).To(Equal(good))
	g.Expect(files(t, download(t, obj.Status.Artifact))).To(HaveKeyWithValue("cm.yaml", "v: 1"))

	// A signed commit on top is verified and becomes the artifact.
	c3 := commitAs(t, repo, trusted.Entity, "main", "three", testgit.Files{"cm.yaml": "v: 3"})
	requestReconcile(t, key, "signed")
	obj = waitReady(t, key, "main@sha1:"+c3)
	g.Expect(condition(obj, sourcev1.SourceVerifiedCondition).Message).To(
		Equal("verified signature of commit " + c3 + " with key " + trusted.Fingerprint))
	g.Expect(files(t, download(t, obj.Status.Artifact))).To(HaveKeyWithValue("cm.yaml", "v: 3"))
}

func TestAddingVerifyNeverTakesTheUnverifiedArtifactAsVerified(t *testing.T) {
	g := NewWithT(t)
	trusted := newSigningKey(t, "trusted")
	repo := repoFor(t)
	c1 := commitAs(t, repo, nil, "main", "one", testgit.Files{"cm.yaml": "v: 1"})
	ns := namespace(t)
	credentials(t, ns, "keys", map[string]string{"trusted.asc": trusted.Public})
	obj := newGitRepository(ns, "app", repo.URL(), basicAuth(t, ns), &sourcev1.GitRepositoryRef{Branch: "main"})
	g.Expect(k8s.Create(context.Background(), obj)).To(Succeed())
	key := keyOf(obj)
	good := waitReady(t, key, "main@sha1:"+c1).Status.Artifact
	g.Expect(condition(get(g, key), sourcev1.SourceVerifiedCondition)).To(BeNil())

	obj = get(g, key)
	patch := client.MergeFrom(obj.DeepCopy())
	verifying(obj, sourcev1.ModeGitHEAD, "keys")
	g.Expect(k8s.Patch(context.Background(), obj, patch)).To(Succeed())
	waitFailed(t, key, sourcev1.InvalidCommitSignatureReason)

	// The artifact has the revision and this generation was judged, yet a
	// later reconcile checks the revision again rather than skipping it.
	obj = requestReconcile(t, key, "again")
	ready := condition(obj, meta.ReadyCondition)
	g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(ready.Reason).To(Equal(sourcev1.InvalidCommitSignatureReason))
	g.Expect(obj.Status.Artifact).To(Equal(good))

	// Removing spec.verify removes the condition.
	obj = get(g, key)
	patch = client.MergeFrom(obj.DeepCopy())
	obj.Spec.Verification = nil
	g.Expect(k8s.Patch(context.Background(), obj, patch)).To(Succeed())
	obj = waitReady(t, key, "main@sha1:"+c1)
	g.Expect(condition(obj, sourcev1.SourceVerifiedCondition)).To(BeNil())
}

func TestVerificationSecretProblemsAreClearAndRetried(t *testing.T) {
	trusted := newSigningKey(t, "trusted")
	repo := repoFor(t)
	c1 := commitAs(t, repo, trusted.Entity, "main", "one", testgit.Files{"cm.yaml": "v: 1"})
	ns := namespace(t)
	secret := basicAuth(t, ns)
	credentials(t, ns, "garbage", map[string]string{"trusted.asc": trusted.Public, "team.asc": "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nbm90IGEga2V5\n-----END PGP PUBLIC KEY BLOCK-----\n"})
	credentials(t, ns, "empty", map[string]string{})
	credentials(t, ns, "too-large", map[string]string{"trusted.asc": trusted.Public, "padding": strings.Repeat("x", 300<<10)})

	tests := []struct {
		name, secret, message string
	}{
		{"missing", "absent", "spec.verify.secretRef: Secret " + ns + "/absent not found"},
		{"garbage", "garbage", "spec.verify.secretRef: Secret " + ns + `/garbage: the value of "team.asc" is not an armored OpenPGP public key`},
		{"empty", "empty", "spec.verify.secretRef: Secret " + ns + "/empty holds no public key"},
		{"too-large", "too-large", "more than the limit of 262144"},
	}
	// The group returns once its parallel cases have finished.
	t.Run("refused", func(t *testing.T) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				g := NewWithT(t)
				obj := verifying(newGitRepository(ns, tt.name, repo.URL(), secret, &sourcev1.GitRepositoryRef{Branch: "main"}),
					sourcev1.ModeGitHEAD, tt.secret)
				g.Expect(k8s.Create(context.Background(), obj)).To(Succeed())
				key := keyOf(obj)
				obj = waitFailed(t, key, sourcev1.VerificationErrorReason)
				g.Expect(condition(obj, meta.ReadyCondition).Message).To(ContainSubstring(tt.message))
				g.Expect(condition(obj, sourcev1.SourceVerifiedCondition).Reason).To(Equal(sourcev1.VerificationErrorReason))
				g.Expect(condition(obj, meta.ReconcilingCondition).Reason).To(Equal(meta.ProgressingWithRetryReason))
				g.Expect(obj.Status.Artifact).To(BeNil())
			})
		}
	})

	// The missing Secret, once created, is read by a retry: nothing else
	// touches the object.
	g := NewWithT(t)
	credentials(t, ns, "absent", map[string]string{"trusted.asc": trusted.Public})
	obj := waitReady(t, types.NamespacedName{Namespace: ns, Name: "missing"}, "main@sha1:"+c1)
	g.Expect(condition(obj, sourcev1.SourceVerifiedCondition).Status).To(Equal(metav1.ConditionTrue))
}

func TestVerifyIsCheckedAtAdmission(t *testing.T) {
	ns := namespace(t)
	base := func(name string) *sourcev1.GitRepository {
		return newGitRepository(ns, name, "https://example.com/app.git", nil, nil)
	}
	tests := []struct {
		name    string
		verify  *sourcev1.GitRepositoryVerification
		refused string // "" when accepted
		mode    sourcev1.GitVerificationMode
	}{
		{name: "defaulted", verify: &sourcev1.GitRepositoryVerification{SecretRef: meta.LocalObjectReference{Name: "keys"}}, mode: sourcev1.ModeGitHEAD},
		{name: "tag-and-head", verify: &sourcev1.GitRepositoryVerification{Mode: sourcev1.ModeGitTagAndHEAD, SecretRef: meta.LocalObjectReference{Name: "keys"}}, mode: sourcev1.ModeGitTagAndHEAD},
		{name: "unknown-mode", verify: &sourcev1.GitRepositoryVerification{Mode: "Commit", SecretRef: meta.LocalObjectReference{Name: "keys"}},
			refused: `spec.verify.mode: Unsupported value: "Commit"`},
		{name: "no-secret", verify: &sourcev1.GitRepositoryVerification{Mode: sourcev1.ModeGitHEAD},
			refused: "spec.verify.secretRef.name: Invalid value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			obj := base(tt.name)
			obj.Spec.Suspend = true
			obj.Spec.Verification = tt.verify
			err := k8s.Create(context.Background(), obj)
			if tt.refused != "" {
				g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
				g.Expect(err.Error()).To(ContainSubstring(tt.refused))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(get(g, keyOf(obj)).Spec.Verification.Mode).To(Equal(tt.mode))
		})
	}
}
