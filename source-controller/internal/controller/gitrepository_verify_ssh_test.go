package controller

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"golang.org/x/crypto/ssh"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/testgit"
)

func newSSHSigner(t *testing.T) ssh.Signer {
	t.Helper()
	_, s, err := testgit.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// commitAsSSH commits on branch with an SSH signature by key.
func commitAsSSH(t *testing.T, repo *testgit.Repo, key ssh.Signer, branch, msg string, files testgit.Files) string {
	t.Helper()
	repo.SignWithSSH(key)
	defer repo.SignWithSSH(nil)
	return mustCommit(t, repo, branch, msg, files)
}

func TestSSHSignedRevisionsAreVerifiedWithTheSSHKeysOfTheSecret(t *testing.T) {
	g := NewWithT(t)
	trusted, stranger := newSSHSigner(t), newSSHSigner(t)
	pgp := newSigningKey(t, "pgp")
	fp := ssh.FingerprintSHA256(trusted.PublicKey())
	repo := repoFor(t)
	c1 := commitAsSSH(t, repo, trusted, "main", "one", testgit.Files{"cm.yaml": "v: 1"})
	ns := namespace(t)
	// One Secret with both kinds of keys, as Flux documents it.
	credentials(t, ns, "keys", map[string]string{
		"pgp.asc":        pgp.Public,
		"trusted.sshpub": "# the release key\n" + string(ssh.MarshalAuthorizedKey(trusted.PublicKey())),
	})
	auth := basicAuth(t, ns)
	obj := verifying(newGitRepository(ns, "app", repo.URL(), auth, &sourcev1.GitRepositoryRef{Branch: "main"}),
		sourcev1.ModeGitHEAD, "keys")
	g.Expect(k8s.Create(context.Background(), obj)).To(Succeed())
	key := keyOf(obj)
	obj = waitReady(t, key, "main@sha1:"+c1)
	g.Expect(condition(obj, sourcev1.SourceVerifiedCondition).Message).To(Equal("verified signature of commit " + c1 + " with key " + fp))
	good := obj.Status.Artifact

	// A commit signed by an SSH key the Secret does not hold is refused,
	// and the verified artifact stays.
	c2 := commitAsSSH(t, repo, stranger, "main", "two", testgit.Files{"cm.yaml": "v: 2"})
	requestReconcile(t, key, "stranger")
	obj = waitFailed(t, key, sourcev1.InvalidCommitSignatureReason)
	g.Expect(condition(obj, meta.ReadyCondition).Message).To(ContainSubstring("commit " + c2 + " is signed with SSH key " +
		ssh.FingerprintSHA256(stranger.PublicKey()) + ", which is not among the keys of spec.verify.secretRef: Secret " + ns + "/keys"))
	g.Expect(condition(obj, sourcev1.SourceVerifiedCondition).Status).To(Equal(metav1.ConditionFalse))
	g.Expect(obj.Status.Artifact).To(Equal(good))
	g.Expect(files(t, download(t, obj.Status.Artifact))).To(HaveKeyWithValue("cm.yaml", "v: 1"))

	// So is an unsigned one.
	c3 := commitAs(t, repo, nil, "main", "three", testgit.Files{"cm.yaml": "v: 3"})
	requestReconcile(t, key, "unsigned")
	obj = waitFailed(t, key, sourcev1.InvalidCommitSignatureReason)
	g.Expect(condition(obj, meta.ReadyCondition).Message).To(ContainSubstring("commit " + c3 + " is not signed"))
	g.Expect(obj.Status.Artifact).To(Equal(good))

	// An OpenPGP signature is checked against the OpenPGP keys of the
	// same Secret.
	c4 := commitAs(t, repo, pgp.Entity, "main", "four", testgit.Files{"cm.yaml": "v: 4"})
	requestReconcile(t, key, "pgp")
	obj = waitReady(t, key, "main@sha1:"+c4)
	g.Expect(condition(obj, sourcev1.SourceVerifiedCondition).Message).To(Equal("verified signature of commit " + c4 + " with key " + pgp.Fingerprint))

	// An SSH-signed annotated tag on an SSH-signed commit (TagAndHEAD).
	c5 := commitAsSSH(t, repo, trusted, "release", "five", testgit.Files{"cm.yaml": "v: 5"})
	repo.SignWithSSH(trusted)
	g.Expect(repo.Tag("v1.0.0", c5, "release 1.0.0")).To(Succeed())
	repo.SignWithSSH(nil)
	tagged := verifying(newGitRepository(ns, "tagged", repo.URL(), auth, &sourcev1.GitRepositoryRef{Tag: "v1.0.0"}),
		sourcev1.ModeGitTagAndHEAD, "keys")
	g.Expect(k8s.Create(context.Background(), tagged)).To(Succeed())
	tagged = waitReady(t, keyOf(tagged), "v1.0.0@sha1:"+c5)
	g.Expect(condition(tagged, sourcev1.SourceVerifiedCondition).Message).To(Equal(
		"verified signature of tag v1.0.0 with key " + fp + " and of commit " + c5 + " with key " + fp))
}
