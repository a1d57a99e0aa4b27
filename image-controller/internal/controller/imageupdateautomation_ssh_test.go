package controller

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/testgit"
)

// sshGitRepository creates a GitRepository name of url with a Secret name
// holding identity and knownHosts (pkg/gitauth's keys).
func sshGitRepository(t *testing.T, ns, name, url string, identity []byte, knownHosts string) {
	t.Helper()
	g := NewWithT(t)
	g.Expect(k8s.Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Data:       map[string][]byte{"identity": identity, "known_hosts": []byte(knownHosts)},
	})).To(Succeed())
	gitRepo := newGitRepository(ns, name, url)
	gitRepo.Spec.SecretRef = &meta.LocalObjectReference{Name: name}
	g.Expect(k8s.Create(context.Background(), gitRepo)).To(Succeed())
}

// Over ssh:// the automation clones and pushes with the GitRepository's
// identity, the server's host key checked against known_hosts: with the
// right line the commit lands; with another host's key for the address
// nothing is pushed and the status says the host key is not known.
func TestAutomationPushesOverSSH(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, image := policyFixture(t, "1.2.0")
	srv, repo := gitServer(t, testgit.Files{"deploy/app.yaml": manifest(ns, image+":1.0.0")})
	identity, clientKey, err := testgit.NewKey()
	g.Expect(err).NotTo(HaveOccurred())
	known, err := srv.StartSSH(testgit.SSHOptions{AuthorizedKeys: []ssh.PublicKey{clientKey.PublicKey()}})
	g.Expect(err).NotTo(HaveOccurred())
	_, otherHost, err := testgit.NewKey()
	g.Expect(err).NotTo(HaveOccurred())

	sshGitRepository(t, ns, "stranger", repo.SSHURL(), identity,
		knownhosts.Line([]string{knownhosts.Normalize(srv.SSHAddress())}, otherHost.PublicKey()))
	stranger := newAutomation(ns, "stranger", "stranger")
	g.Expect(k8s.Create(ctx, stranger)).To(Succeed())
	stranger = waitReady(t, stranger, metav1.ConditionFalse, sourcev1.AuthenticationFailedReason)
	g.Expect(readyOf(stranger.Status.Conditions).Message).To(ContainSubstring("host key"))
	g.Expect(srv.Pushes("app")).To(BeZero())

	sshGitRepository(t, ns, "app", repo.SSHURL(), identity, known)
	auto := newAutomation(ns, "app", "app")
	g.Expect(k8s.Create(ctx, auto)).To(Succeed())
	auto = waitReady(t, auto, metav1.ConditionTrue, meta.SucceededReason)
	head, err := repo.Head("main")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(auto.Status.LastPushCommit).To(Equal(head))
	g.Expect(repo.File(head, "deploy/app.yaml")).To(Equal(manifest(ns, image+":1.2.0")))
	g.Expect(srv.Pushes("app")).To(Equal(1), "pushed over SSH")
}

// An ssh:// URL on an address the policy refuses fails before any
// connection, as over HTTP, naming the address and the flag.
func TestAutomationRefusesAnSSHAddressOutsideThePolicy(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t)
	identity, _, err := testgit.NewKey()
	g.Expect(err).NotTo(HaveOccurred())
	_, host, err := testgit.NewKey()
	g.Expect(err).NotTo(HaveOccurred())
	sshGitRepository(t, ns, "app", "ssh://git@10.255.255.1/app.git", identity,
		knownhosts.Line([]string{"10.255.255.1"}, host.PublicKey()))
	auto := newAutomation(ns, "app", "app")
	g.Expect(k8s.Create(ctx, auto)).To(Succeed())
	auto = waitReady(t, auto, metav1.ConditionFalse, sourcev1.GitOperationFailedReason)
	msg := readyOf(auto.Status.Conditions).Message
	g.Expect(msg).To(ContainSubstring("10.255.255.1 refused"))
	g.Expect(msg).To(ContainSubstring("--allowed-private-networks"))
}
