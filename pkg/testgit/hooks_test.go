package testgit

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
)

// A commit made in BeforePush makes the push it runs for stale: Git
// refuses it, the branch keeps the hook's commit, and the next push
// (after the client fetched and rebased) lands on top of it.
func TestBeforePushMovesTheBranchUnderAPush(t *testing.T) {
	g := NewWithT(t)
	srv, err := NewServer(Options{Push: true})
	g.Expect(err).NotTo(HaveOccurred())
	defer srv.Close()
	repo, err := srv.CreateRepo("app")
	g.Expect(err).NotTo(HaveOccurred())
	first, err := repo.Commit("main", "one", Files{"a.yaml": "a"})
	g.Expect(err).NotTo(HaveOccurred())
	var person string
	var hookErr error
	srv.BeforePush(func(name string, n int) {
		if n == 1 {
			person, hookErr = repo.Commit("main", "a person's", Files{"b.yaml": "b"})
		}
	})

	dir := filepath.Join(t.TempDir(), "clone")
	gitCLI := func(args ...string) (string, error) {
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@plumb.dev"}, args...)...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	cloned, err := exec.Command("git", "clone", "-q", repo.URL(), dir).CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), string(cloned))
	g.Expect(os.WriteFile(filepath.Join(dir, "c.yaml"), []byte("c"), 0o644)).To(Succeed())
	out, err := gitCLI("add", "c.yaml")
	g.Expect(err).NotTo(HaveOccurred(), out)
	out, err = gitCLI("commit", "-q", "-m", "mine")
	g.Expect(err).NotTo(HaveOccurred(), out)
	out, err = gitCLI("push", "origin", "main")
	g.Expect(err).To(HaveOccurred(), out)
	g.Expect(hookErr).NotTo(HaveOccurred())
	head, err := repo.Head("main")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(head).To(Equal(person))
	g.Expect(repo.Parents(person)).To(Equal([]string{first}))
	g.Expect(repo.File(person, "b.yaml")).To(Equal("b"))

	out, err = gitCLI("pull", "-q", "--rebase", "origin", "main")
	g.Expect(err).NotTo(HaveOccurred(), out)
	out, err = gitCLI("push", "-q", "origin", "main")
	g.Expect(err).NotTo(HaveOccurred(), out)
	head, err = repo.Head("main")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(repo.Parents(head)).To(Equal([]string{person}))
	g.Expect(srv.Pushes("app")).To(Equal(2))
}
