package controller

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	imagev1 "plumb.dev/api/image/v1"
	"plumb.dev/api/meta"
	"plumb.dev/pkg/testgit"
)

// signedAutomation creates a Secret name holding data and an automation
// name on the GitRepository "app" signing with it as keyType.
func signedAutomation(t *testing.T, ns, name string, keyType imagev1.SigningKeyType, data map[string][]byte) *imagev1.ImageUpdateAutomation {
	t.Helper()
	g := NewWithT(t)
	g.Expect(k8s.Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: data,
	})).To(Succeed())
	auto := newAutomation(ns, name, "app")
	auto.Spec.Git.Commit.SigningKey = &imagev1.SigningKey{Type: keyType, SecretRef: meta.LocalObjectReference{Name: name}}
	g.Expect(k8s.Create(context.Background(), auto)).To(Succeed())
	return auto
}

// With signingKey.type ssh the commit carries an SSH signature by the
// Secret's identity, which Git itself verifies (gpg.format=ssh) for that
// key and not for another. A Secret without identity stalls, and the
// CRD admits gpg and ssh only.
func TestAutomationSignsItsCommitWithAnSSHKey(t *testing.T) {
	g := NewWithT(t)
	ns, _, _, repo := automationFixture(t, "1.3.0")
	identity, key, err := testgit.NewKey()
	g.Expect(err).NotTo(HaveOccurred())

	noKey := signedAutomation(t, ns, "no-identity", imagev1.SigningKeyTypeSSH, map[string][]byte{"git.asc": []byte("an OpenPGP key")})
	noKey = waitReady(t, noKey, metav1.ConditionFalse, imagev1.InvalidSourceConfigReason)
	g.Expect(readyOf(noKey.Status.Conditions).Message).To(ContainSubstring("no identity (the SSH private key)"))

	auto := signedAutomation(t, ns, "app", imagev1.SigningKeyTypeSSH, map[string][]byte{"identity": identity})
	auto = waitReady(t, auto, metav1.ConditionTrue, meta.SucceededReason)
	head, err := repo.Head("main")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(auto.Status.LastPushCommit).To(Equal(head))
	report, err := repo.VerifySSH(head, "bot@example.com", key.PublicKey())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(report).To(ContainSubstring(`Good "git" signature for bot@example.com`))
	_, other, err := testgit.NewKey()
	g.Expect(err).NotTo(HaveOccurred())
	_, err = repo.VerifySSH(head, "bot@example.com", other.PublicKey())
	g.Expect(err).To(HaveOccurred(), "verified with another key")

	pgp := newAutomation(ns, "pgp", "app")
	pgp.Spec.Git.Commit.SigningKey = &imagev1.SigningKey{Type: "pgp", SecretRef: meta.LocalObjectReference{Name: "app"}}
	err = k8s.Create(context.Background(), pgp)
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(ContainSubstring("spec.git.commit.signingKey.type"))
}
