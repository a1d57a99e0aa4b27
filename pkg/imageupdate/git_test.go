package imageupdate

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/go-git/go-billy/v5/memfs"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/storage/memory"

	"plumb.dev/pkg/testgit"
)

const deployYAML = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: app # the app
  namespace: apps
spec:
  template:
    spec:
      containers:
        - name: app
          image: registry.example/app:1.0.0 # {"$imagepolicy": "apps:app"}
`

var appRefs = map[string]ImageRef{"apps:app": {Name: "registry.example/app", Tag: "1.1.0"}}

// gitServer starts a testgit server that accepts pushes, with a
// repository holding deploy.yaml under clusters/prod.
func gitServer(t *testing.T) (*testgit.Repo, Remote) {
	t.Helper()
	srv, err := testgit.NewServer(testgit.Options{Username: "bot", Password: "s3cret", Push: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	repo, err := srv.CreateRepo("fleet")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Commit("main", "first", testgit.Files{
		"clusters/prod/deploy.yaml": deployYAML,
		"clusters/dev/deploy.yaml":  deployYAML,
	}); err != nil {
		t.Fatal(err)
	}
	return repo, Remote{URL: repo.URL(), Auth: &githttp.BasicAuth{Username: "bot", Password: "s3cret"}}
}

func runOptions(t *testing.T, remote Remote) Options {
	return Options{
		Remote:     remote,
		Checkout:   Ref{Branch: "main"},
		Dir:        t.TempDir(),
		UpdatePath: "clusters/prod",
		Policies:   appRefs,
		Author:     Author{Name: "Plumb Bot", Email: "bot@plumb.dev"},
		Automation: AutomationObject{Namespace: "apps", Name: "app"},
	}
}

// remoteBranch clones a branch of the remote into memory.
func remoteBranch(t *testing.T, remote Remote, branch string) (*git.Repository, *object.Commit) {
	t.Helper()
	repo, err := git.Clone(memory.NewStorage(), memfs.New(), &git.CloneOptions{
		URL: remote.URL, Auth: remote.Auth, ReferenceName: plumbing.NewBranchReferenceName(branch), SingleBranch: true,
	})
	if err != nil {
		t.Fatalf("cloning %s: %v", branch, err)
	}
	head, err := repo.Head()
	if err != nil {
		t.Fatal(err)
	}
	c, err := repo.CommitObject(head.Hash())
	if err != nil {
		t.Fatal(err)
	}
	return repo, c
}

func fileAt(t *testing.T, c *object.Commit, name string) string {
	t.Helper()
	f, err := c.File(name)
	if err != nil {
		t.Fatalf("%s at %s: %v", name, c.Hash, err)
	}
	s, err := f.Contents()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestAnUpdateIsCommittedAndPushed(t *testing.T) {
	_, remote := gitServer(t)
	o := runOptions(t, remote)
	tmpl, err := ParseMessageTemplate("{{ .AutomationObject }}: {{ range .Changed.Changes }}{{ .NewValue }}{{ end }}")
	if err != nil {
		t.Fatal(err)
	}
	o.Message = tmpl
	out, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	_, c := remoteBranch(t, remote, "main")
	if c.Hash.String() != out.Commit || out.Attempts != 1 {
		t.Errorf("main is at %s, the run pushed %s in %d attempts", c.Hash, out.Commit, out.Attempts)
	}
	if c.Message != "apps/app: registry.example/app:1.1.0" {
		t.Errorf("message %q", c.Message)
	}
	if c.Author.Name != "Plumb Bot" || c.Author.Email != "bot@plumb.dev" || c.Committer.Email != "bot@plumb.dev" {
		t.Errorf("author %v, committer %v", c.Author, c.Committer)
	}
	want := strings.Replace(deployYAML, "app:1.0.0", "app:1.1.0", 1)
	if got := fileAt(t, c, "clusters/prod/deploy.yaml"); got != want {
		t.Errorf("clusters/prod/deploy.yaml:\n%s", got)
	}
	if got := fileAt(t, c, "clusters/dev/deploy.yaml"); got != deployYAML {
		t.Errorf("clusters/dev/deploy.yaml, outside update.path, changed:\n%s", got)
	}
	if c.PGPSignature != "" {
		t.Error("an unsigned run signed its commit")
	}

	// Up to date now: a second run commits nothing.
	o.Dir = t.TempDir()
	again, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if again.Commit != "" || !again.Result.Empty() {
		t.Errorf("a run with nothing to change committed %q (%v)", again.Commit, again.Result.Files())
	}
	if _, head := remoteBranch(t, remote, "main"); head.Hash != c.Hash {
		t.Errorf("main moved to %s on a run with nothing to change", head.Hash)
	}
}

func TestTheCommitIsSignedWithTheKey(t *testing.T) {
	_, remote := gitServer(t)
	key, err := testgit.NewSigningKey("bot")
	if err != nil {
		t.Fatal(err)
	}
	o := runOptions(t, remote)
	o.SigningKey = key.Entity
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	_, c := remoteBranch(t, remote, "main")
	signer, err := c.Verify(key.Public)
	if err != nil {
		t.Fatalf("the commit does not verify with the public key: %v", err)
	}
	if got := strings.ToUpper(signer.PrimaryKey.KeyIdString()); !strings.HasSuffix(key.Fingerprint, got) {
		t.Errorf("signed by %s, want %s", got, key.Fingerprint)
	}
	other, err := testgit.NewSigningKey("mallory")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Verify(other.Public); err == nil {
		t.Error("the commit verifies with another key")
	}
}

func TestAPushBranchLeavesTheCheckoutBranchAlone(t *testing.T) {
	repo, remote := gitServer(t)
	mainBefore, err := repo.Head("main")
	if err != nil {
		t.Fatal(err)
	}
	o := runOptions(t, remote)
	o.Push = Push{Branch: "image-updates"}
	out, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if mainAfter, err := repo.Head("main"); err != nil || mainAfter != mainBefore {
		t.Errorf("main moved from %s to %s (%v)", mainBefore, mainAfter, err)
	}
	_, c := remoteBranch(t, remote, "image-updates")
	if c.Hash.String() != out.Commit || len(c.ParentHashes) != 1 || c.ParentHashes[0].String() != mainBefore {
		t.Errorf("image-updates at %s (parents %v), want the run's %s on main's %s", c.Hash, c.ParentHashes, out.Commit, mainBefore)
	}

	// The next update goes on top of the review branch, not over it.
	o.Dir = t.TempDir()
	o.Policies = map[string]ImageRef{"apps:app": {Name: "registry.example/app", Tag: "1.2.0"}}
	next, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	_, c2 := remoteBranch(t, remote, "image-updates")
	if c2.Hash.String() != next.Commit || c2.ParentHashes[0] != c.Hash {
		t.Errorf("image-updates at %s (parents %v), want %s on %s", c2.Hash, c2.ParentHashes, next.Commit, c.Hash)
	}
	if got := fileAt(t, c2, "clusters/prod/deploy.yaml"); !strings.Contains(got, "app:1.2.0 #") {
		t.Errorf("deploy.yaml:\n%s", got)
	}
}

func TestAPushThatLosesARaceIsRebuiltOnTheNewHead(t *testing.T) {
	repo, remote := gitServer(t)
	o := runOptions(t, remote)
	var person string
	o.beforePush = func(attempt int) {
		if attempt != 1 {
			return
		}
		// A person's commit lands between the checkout and the push.
		h, err := repo.Commit("main", "a person's change", testgit.Files{"README.md": "hello\n"})
		if err != nil {
			t.Error(err)
		}
		person = h
	}
	out, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if out.Attempts != 2 {
		t.Errorf("attempts: %d, want 2", out.Attempts)
	}
	_, c := remoteBranch(t, remote, "main")
	if c.Hash.String() != out.Commit || len(c.ParentHashes) != 1 || c.ParentHashes[0].String() != person {
		t.Fatalf("main at %s (parents %v), want the run's %s on the person's %s", c.Hash, c.ParentHashes, out.Commit, person)
	}
	if got := fileAt(t, c, "README.md"); got != "hello\n" {
		t.Errorf("the person's change is lost: README.md %q", got)
	}
	if got := fileAt(t, c, "clusters/prod/deploy.yaml"); !strings.Contains(got, "app:1.1.0 #") {
		t.Errorf("the update is lost:\n%s", got)
	}
}

func TestARaceWithTheSameChangeCommitsNothing(t *testing.T) {
	repo, remote := gitServer(t)
	o := runOptions(t, remote)
	var person string
	o.beforePush = func(attempt int) {
		if attempt == 1 {
			h, err := repo.Commit("main", "a person updates the image by hand", testgit.Files{
				"clusters/prod/deploy.yaml": strings.Replace(deployYAML, "app:1.0.0", "app:1.1.0", 1),
			})
			if err != nil {
				t.Error(err)
			}
			person = h
		}
	}
	out, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if out.Commit != "" {
		t.Errorf("pushed %s though the remote already had the change", out.Commit)
	}
	if head, err := repo.Head("main"); err != nil || head != person {
		t.Errorf("main at %s, want the person's %s (%v)", head, person, err)
	}
}

func TestARemoteThatKeepsMovingIsGivenUpOnWithoutForce(t *testing.T) {
	repo, remote := gitServer(t)
	o := runOptions(t, remote)
	o.MaxAttempts = 2
	var last string
	o.beforePush = func(attempt int) {
		h, err := repo.Commit("main", "busy", testgit.Files{"README.md": strings.Repeat("x", attempt)})
		if err != nil {
			t.Error(err)
		}
		last = h
	}
	_, err := Run(context.Background(), o)
	if err == nil || !strings.Contains(err.Error(), "gave up after 2 attempts") {
		t.Fatalf("got %v, want the run to give up after 2 attempts", err)
	}
	if head, err := repo.Head("main"); err != nil || head != last {
		t.Errorf("main at %s, want the last person's commit %s: the run must not force (%v)", head, last, err)
	}
}

func TestInvalidOptionsAreRefusedBeforeAnyFetch(t *testing.T) {
	repo, remote := gitServer(t)
	for name, mod := range map[string]func(*Options){
		"tag without push branch": func(o *Options) { o.Checkout = Ref{Tag: "v1"} },
		"no author email":         func(o *Options) { o.Author.Email = "" },
		"force refspec":           func(o *Options) { o.Push.Refspec = "+refs/heads/main:refs/heads/x" },
		"two refs":                func(o *Options) { o.Checkout = Ref{Branch: "main", Tag: "v1"} },
		"no ref":                  func(o *Options) { o.Checkout = Ref{}; o.Push.Branch = "x" },
		"short commit":            func(o *Options) { o.Checkout = Ref{Commit: "abc123"}; o.Push.Branch = "x" },
	} {
		o := runOptions(t, remote)
		mod(&o)
		before := repo.Fetches()
		if _, err := Run(context.Background(), o); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: got %v, want ErrInvalid", name, err)
		}
		if repo.Fetches() != before {
			t.Errorf("%s: fetched before refusing", name)
		}
	}
}

// With an SSH key the commit carries an SSH signature that Git itself
// verifies (gpg.format=ssh) for the key, and not for another.
func TestTheCommitIsSignedWithAnSSHKey(t *testing.T) {
	repo, remote := gitServer(t)
	_, key, err := testgit.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	o := runOptions(t, remote)
	o.SSHSigningKey = key
	out, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	report, err := repo.VerifySSH(out.Commit, "bot@plumb.dev", key.PublicKey())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(report, `Good "git" signature for bot@plumb.dev`) {
		t.Errorf("git verify-commit said %q", report)
	}
	_, other, err := testgit.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	if report, err := repo.VerifySSH(out.Commit, "bot@plumb.dev", other.PublicKey()); err == nil {
		t.Errorf("the commit verifies with another key: %q", report)
	}

	o.Dir, o.SigningKey = t.TempDir(), &openpgp.Entity{}
	if _, err := Run(context.Background(), o); !errors.Is(err, ErrInvalid) {
		t.Errorf("both keys: %v, want ErrInvalid", err)
	}
}
