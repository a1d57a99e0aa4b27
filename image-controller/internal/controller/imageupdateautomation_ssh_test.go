package controller

import (
	"testing"

	. "github.com/onsi/gomega"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/testgit"
)

// sshSecret is the data of a GitRepository's SSH Secret.
func sshSecret(identity []byte, knownHosts string) map[string][]byte {
	return map[string][]byte{"identity": identity, "known_hosts": []byte(knownHosts)}
}

// Over ssh:// the automation clones and pushes with the GitRepository's
// identity, the server's host key checked against known_hosts: with the
// right line the commit lands; with another host's key for the address
// nothing is pushed and the status says the host key is not known.
func TestAutomationPushesOverSSH(t *testing.T) {
	g := NewWithT(t)
	ns, image := policyFixture(t, "1.2.0")
	srv, repo := gitServer(t, testgit.Files{"deploy/app.yaml": manifest(ns, image+":1.0.0")})
	identity, clientKey, err := testgit.NewKey()
	g.Expect(err).NotTo(HaveOccurred())
	known, err := srv.StartSSH(testgit.SSHOptions{AuthorizedKeys: []ssh.PublicKey{clientKey.PublicKey()}})
	g.Expect(err).NotTo(HaveOccurred())
	_, otherHost, err := testgit.NewKey()
	g.Expect(err).NotTo(HaveOccurred())

	gitRepositoryWithSecret(t, ns, "stranger", repo.SSHURL(), sshSecret(identity,
		knownhosts.Line([]string{knownhosts.Normalize(srv.SSHAddress())}, otherHost.PublicKey())))
	g.Expect(failingAutomation(t, ns, "stranger", sourcev1.AuthenticationFailedReason)).To(
		ContainSubstring("the SSH host key is not in the known_hosts"))
	g.Expect(srv.Pushes("app")).To(BeZero())

	gitRepositoryWithSecret(t, ns, "app", repo.SSHURL(), sshSecret(identity, known))
	pushingAutomation(t, ns, "app", repo, manifest(ns, image+":1.2.0"))
	g.Expect(srv.Pushes("app")).To(Equal(1), "pushed over SSH")
}

// An ssh:// URL on an address the policy refuses fails before any
// connection, as over HTTP, naming the address and the flag.
func TestAutomationRefusesAnSSHAddressOutsideThePolicy(t *testing.T) {
	g := NewWithT(t)
	ns := namespace(t)
	identity, _, err := testgit.NewKey()
	g.Expect(err).NotTo(HaveOccurred())
	_, host, err := testgit.NewKey()
	g.Expect(err).NotTo(HaveOccurred())
	gitRepositoryWithSecret(t, ns, "app", "ssh://git@10.255.255.1/app.git", sshSecret(identity,
		knownhosts.Line([]string{"10.255.255.1"}, host.PublicKey())))
	msg := failingAutomation(t, ns, "app", sourcev1.GitOperationFailedReason)
	g.Expect(msg).To(ContainSubstring("10.255.255.1 refused"))
	g.Expect(msg).To(ContainSubstring("--allowed-private-networks"))
}
