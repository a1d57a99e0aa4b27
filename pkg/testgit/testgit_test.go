package testgit

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	. "github.com/onsi/gomega"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

func TestHTTPServesShallowClonesWithAuth(t *testing.T) {
	g := NewWithT(t)
	srv, err := NewServer(Options{Username: "git", Password: "pw", BearerToken: "tok"})
	g.Expect(err).NotTo(HaveOccurred())
	defer srv.Close()
	repo, err := srv.CreateRepo("app")
	g.Expect(err).NotTo(HaveOccurred())
	c1, err := repo.Commit("main", "one", Files{"a.yaml": "a", "run.sh*": "#!/bin/sh"})
	g.Expect(err).NotTo(HaveOccurred())
	c2, err := repo.Commit("main", "two", Files{"b/c.yaml": "c", "a.yaml": Delete})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(repo.Tag("v1.0.0", c1, "release")).To(Succeed())
	g.Expect(repo.Tag("light", c2, "")).To(Succeed())
	_, err = repo.Commit("feature", "three", Files{"f.yaml": "f"})
	g.Expect(err).NotTo(HaveOccurred())
	head, err := repo.Head("main")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(head).To(Equal(c2))

	for _, auth := range []githttp.AuthMethod{&githttp.BasicAuth{Username: "git", Password: "pw"}, &githttp.TokenAuth{Token: "tok"}} {
		dir := t.TempDir()
		cloned, err := git.PlainCloneContext(context.Background(), dir, false, &git.CloneOptions{
			URL: repo.URL(), Auth: auth, Depth: 1, SingleBranch: true,
			ReferenceName: plumbing.NewBranchReferenceName("main"),
		})
		g.Expect(err).NotTo(HaveOccurred())
		h, _ := cloned.Head()
		g.Expect(h.Hash().String()).To(Equal(c2))
		g.Expect(filepath.Join(dir, "b", "c.yaml")).To(BeAnExistingFile())
		g.Expect(filepath.Join(dir, "a.yaml")).NotTo(BeAnExistingFile())
		fi, err := os.Stat(filepath.Join(dir, "run.sh"))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(fi.Mode().Perm() & 0o100).NotTo(BeZero())
	}
	g.Expect(repo.Fetches()).To(Equal(2))

	_, err = git.PlainClone(t.TempDir(), false, &git.CloneOptions{URL: repo.URL(), Auth: &githttp.BasicAuth{Username: "git", Password: "wrong"}})
	g.Expect(err).To(MatchError(ContainSubstring("authentication required")))
	_, err = git.PlainClone(t.TempDir(), false, &git.CloneOptions{URL: repo.URL()})
	g.Expect(err).To(HaveOccurred())
}

func TestSSHChecksKeys(t *testing.T) {
	g := NewWithT(t)
	srv, err := NewServer(Options{})
	g.Expect(err).NotTo(HaveOccurred())
	defer srv.Close()
	repo, err := srv.CreateRepo("app")
	g.Expect(err).NotTo(HaveOccurred())
	c1, err := repo.Commit("main", "one", Files{"a.yaml": "a"})
	g.Expect(err).NotTo(HaveOccurred())

	identity, clientKey, err := NewKey()
	g.Expect(err).NotTo(HaveOccurred())
	known, err := srv.StartSSH(SSHOptions{AuthorizedKeys: []ssh.PublicKey{clientKey.PublicKey()}})
	g.Expect(err).NotTo(HaveOccurred())

	clone := func(identity []byte, knownHosts string) error {
		auth, err := gitssh.NewPublicKeys("git", identity, "")
		g.Expect(err).NotTo(HaveOccurred())
		f := filepath.Join(t.TempDir(), "known_hosts")
		g.Expect(os.WriteFile(f, []byte(knownHosts), 0o600)).To(Succeed())
		cb, err := knownhosts.New(f)
		g.Expect(err).NotTo(HaveOccurred())
		auth.HostKeyCallback = cb
		r, err := git.PlainClone(t.TempDir(), false, &git.CloneOptions{URL: repo.SSHURL(), Auth: auth, Depth: 1})
		if err != nil {
			return err
		}
		h, _ := r.Head()
		g.Expect(h.Hash().String()).To(Equal(c1))
		return nil
	}
	g.Expect(clone(identity, known)).To(Succeed())

	other, _, err := NewKey()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(clone(other, known)).To(MatchError(ContainSubstring("unable to authenticate")))

	_, wrongHost, err := NewKey()
	g.Expect(err).NotTo(HaveOccurred())
	wrong := knownhosts.Line([]string{knownhosts.Normalize(srv.SSHAddress())}, wrongHost.PublicKey()) + "\n"
	g.Expect(clone(identity, wrong)).To(MatchError(ContainSubstring("key mismatch")))
}
