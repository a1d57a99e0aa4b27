package testgit

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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

func TestPushIsServedOnlyWhenAsked(t *testing.T) {
	for _, allow := range []bool{false, true} {
		srv, err := NewServer(Options{Username: "git", Password: "pw", Push: allow})
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		repo, err := srv.CreateRepo("pushed")
		if err != nil {
			t.Fatal(err)
		}
		first, err := repo.Commit("main", "first", Files{"a.txt": "a"})
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		u := strings.Replace(repo.URL(), "http://", "http://git:pw@", 1)
		run := func(args ...string) (string, error) {
			cmd := exec.Command("git", args...)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir, "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
			out, err := cmd.CombinedOutput()
			if err != nil {
				return "", fmt.Errorf("git %v: %v: %s", args, err, out)
			}
			return strings.TrimSpace(string(out)), nil
		}
		if _, err := run("clone", "-q", u, "."); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "b.txt"), []byte("b"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := run("add", "b.txt"); err != nil {
			t.Fatal(err)
		}
		if _, err := run("commit", "-q", "-m", "second"); err != nil {
			t.Fatal(err)
		}
		_, err = run("push", "-q", "origin", "main")
		if allow != (err == nil) {
			t.Fatalf("Push: %v: push error %v", allow, err)
		}
		wantPushes := 0
		if allow {
			wantPushes = 1
		}
		if got := srv.Pushes("pushed"); got != wantPushes {
			t.Fatalf("Push: %v: Pushes() = %d, want %d", allow, got, wantPushes)
		}
		local, err := run("rev-parse", "HEAD")
		if err != nil {
			t.Fatal(err)
		}
		head, err := repo.Head("main")
		if err != nil {
			t.Fatal(err)
		}
		want := first
		if allow {
			want = local
		}
		if head != want {
			t.Fatalf("Push: %v: the server's main is %s, want %s", allow, head, want)
		}
	}
}
