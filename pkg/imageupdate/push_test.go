package imageupdate

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"plumb.dev/pkg/testgit"
)

func TestARefspecIsPushedBesidesTheBranch(t *testing.T) {
	_, remote := gitServer(t)
	o := runOptions(t, remote)
	o.Push = Push{Refspec: "refs/heads/main:refs/heads/auto"}
	out, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{"main", "auto"} {
		if _, c := remoteBranch(t, remote, b); c.Hash.String() != out.Commit {
			t.Errorf("%s at %s, want %s", b, c.Hash, out.Commit)
		}
	}
}

func TestPushOptionsReachTheServer(t *testing.T) {
	srv, err := testgit.NewServer(testgit.Options{Push: true})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	repo, err := srv.CreateRepo("fleet")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Commit("main", "first", testgit.Files{"clusters/prod/deploy.yaml": deployYAML}); err != nil {
		t.Fatal(err)
	}
	o := runOptions(t, Remote{URL: repo.URL()})
	o.Push = Push{Branch: "dev", Options: map[string]string{"merge_request.create": "", "merge_request.target": "main"}}
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	got := slices.Sorted(slices.Values(srv.PushOptions("fleet")))
	// go-git sends an option without a value as "key=".
	if want := []string{"merge_request.create=", "merge_request.target=main"}; !reflect.DeepEqual(got, want) {
		t.Errorf("push options %q, want %q", got, want)
	}
}

// sshRemote serves the repository over SSH as well and returns a remote
// with a key the server lets in and its host key trusted.
func sshRemote(t *testing.T) (*testgit.Repo, Remote) {
	srv, err := testgit.NewServer(testgit.Options{Push: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	identity, signer, err := testgit.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	known, err := srv.StartSSH(testgit.SSHOptions{AuthorizedKeys: []ssh.PublicKey{signer.PublicKey()}})
	if err != nil {
		t.Fatal(err)
	}
	repo, err := srv.CreateRepo("fleet")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Commit("main", "first", testgit.Files{"clusters/prod/deploy.yaml": deployYAML}); err != nil {
		t.Fatal(err)
	}
	auth, err := gitssh.NewPublicKeys("git", identity, "")
	if err != nil {
		t.Fatal(err)
	}
	khFile := filepath.Join(t.TempDir(), "known_hosts")
	if err := os.WriteFile(khFile, []byte(known), 0o600); err != nil {
		t.Fatal(err)
	}
	if auth.HostKeyCallback, err = knownhosts.New(khFile); err != nil {
		t.Fatal(err)
	}
	return repo, Remote{URL: repo.SSHURL(), Auth: auth}
}

func TestAnUpdateIsPushedOverSSH(t *testing.T) {
	repo, remote := sshRemote(t)
	out, err := Run(context.Background(), runOptions(t, remote))
	if err != nil {
		t.Fatal(err)
	}
	if head, err := repo.Head("main"); err != nil || head != out.Commit {
		t.Errorf("main at %s, want %s (%v)", head, out.Commit, err)
	}
}

func TestPushOptionsAServerRefusesFailTheRun(t *testing.T) {
	// The SSH side of testgit does not advertise push options.
	repo, remote := sshRemote(t)
	before, err := repo.Head("main")
	if err != nil {
		t.Fatal(err)
	}
	o := runOptions(t, remote)
	o.Push.Options = map[string]string{"ci.skip": ""}
	_, err = Run(context.Background(), o)
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "does not accept push options") {
		t.Fatalf("got %v, want ErrInvalid saying the server does not accept push options", err)
	}
	if head, err := repo.Head("main"); err != nil || head != before {
		t.Errorf("main moved to %s (%v)", head, err)
	}
}

func TestATagOrACommitCheckoutPushesToTheBranch(t *testing.T) {
	repo, remote := gitServer(t)
	c1, err := repo.Head("main")
	if err != nil {
		t.Fatal(err)
	}
	if err := repo.Tag("v1", c1, "release 1"); err != nil {
		t.Fatal(err)
	}
	// main moves on after the tag; the runs build on the tag's commit.
	if _, err := repo.Commit("main", "later", testgit.Files{"README.md": "later\n"}); err != nil {
		t.Fatal(err)
	}
	for name, ref := range map[string]Ref{"tag": {Tag: "v1"}, "commit": {Commit: c1}} {
		o := runOptions(t, remote)
		o.Checkout = ref
		o.Push.Branch = "from-" + name
		out, err := Run(context.Background(), o)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		_, c := remoteBranch(t, remote, "from-"+name)
		if c.Hash.String() != out.Commit || len(c.ParentHashes) != 1 || c.ParentHashes[0].String() != c1 {
			t.Errorf("%s: from-%s at %s (parents %v), want %s on %s", name, name, c.Hash, c.ParentHashes, out.Commit, c1)
		}
	}
}

func TestErrorsShowNoCredentials(t *testing.T) {
	_, remote := gitServer(t)
	o := runOptions(t, remote)
	o.Remote.Auth = nil
	o.Remote.URL = strings.Replace(remote.URL, "http://", "http://bot:wrong-s3cret-91c2@", 1)
	_, err := Run(context.Background(), o)
	if err == nil {
		t.Fatal("a clone with wrong credentials succeeded")
	}
	if strings.Contains(err.Error(), "wrong-s3cret-91c2") {
		t.Errorf("the error shows the password: %v", err)
	}
}

func TestACheckoutOverTheSizeLimitFailsWithAClearError(t *testing.T) {
	_, remote := gitServer(t)
	o := runOptions(t, remote)
	o.Limits.MaxRepositoryBytes = 512
	_, err := Run(context.Background(), o)
	if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "more than 512 bytes of disk") {
		t.Fatalf("got %v, want ErrLimit naming the size limit", err)
	}
}

func TestARefusedPushIsNotRetried(t *testing.T) {
	// This server serves no pushes: the branch did not move, so the
	// refusal is returned as it is, after one attempt.
	srv, err := testgit.NewServer(testgit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	repo, err := srv.CreateRepo("fleet")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Commit("main", "first", testgit.Files{"clusters/prod/deploy.yaml": deployYAML}); err != nil {
		t.Fatal(err)
	}
	out, err := Run(context.Background(), runOptions(t, Remote{URL: repo.URL()}))
	if err == nil || !strings.Contains(err.Error(), "pushing to main") {
		t.Fatalf("got %v, want the push's refusal", err)
	}
	if out.Attempts != 1 || out.Commit != "" {
		t.Errorf("attempts %d, commit %q: want one attempt and no pushed commit", out.Attempts, out.Commit)
	}
}
