package testgit_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"

	"plumb.dev/pkg/testgit"
)

// port hides the server's random port.
var port = regexp.MustCompile(`:[0-9]+/`)

// must returns a commit or revision, or panics.
func must(rev string, err error) string {
	if err != nil {
		panic(err)
	}
	return rev
}

// A test starts a server on 127.0.0.1 with the credentials it wants
// checked, writes commits through the Repo, and points the code under test
// at repo.URL(); here go-git makes the shallow clone source-controller
// makes. Commits are reproducible (a fixed author and clock), so the same
// calls give the same hashes on every run.
func ExampleNewServer() {
	srv, err := testgit.NewServer(testgit.Options{Username: "git", Password: "s3cret"})
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	repo, err := srv.CreateRepo("podinfo")
	if err != nil {
		panic(err)
	}
	commit := must(repo.Commit("main", "first", testgit.Files{"app/cm.yaml": "kind: ConfigMap\n"}))
	if err := repo.Tag("v1.0.0", commit, "release 1.0.0"); err != nil {
		panic(err)
	}
	fmt.Println("commit", commit[:12])
	fmt.Println("served at", port.ReplaceAllString(repo.URL(), ":<port>/"))

	dir, err := os.MkdirTemp("", "example-clone-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	clone := func(password string) error {
		_, err := git.PlainCloneContext(context.Background(), dir, false, &git.CloneOptions{
			URL:           repo.URL(),
			Auth:          &githttp.BasicAuth{Username: "git", Password: password},
			ReferenceName: plumbing.NewBranchReferenceName("main"),
			SingleBranch:  true,
			Depth:         1,
		})
		return err
	}
	err = clone("guess")
	fmt.Println("wrong password refused:", errors.Is(err, transport.ErrAuthenticationRequired))
	if err := clone("s3cret"); err != nil {
		panic(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "app", "cm.yaml"))
	if err != nil {
		panic(err)
	}
	fmt.Printf("app/cm.yaml: %q\n", data)
	// The refused clone sent no upload-pack request: one fetch.
	fmt.Println("fetches:", repo.Fetches())
	// Output:
	// commit 7275a29f3d33
	// served at http://127.0.0.1:<port>/podinfo.git
	// wrong password refused: true
	// app/cm.yaml: "kind: ConfigMap\n"
	// fetches: 1
}

// Commit writes files onto a branch (a new branch starts at the default
// branch's head); the content testgit.Delete removes a path, and Head says
// where a branch points.
func ExampleRepo_Commit() {
	srv, err := testgit.NewServer(testgit.Options{})
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	repo, err := srv.CreateRepo("app")
	if err != nil {
		panic(err)
	}
	first := must(repo.Commit("main", "add the app", testgit.Files{"deploy/web.yaml": "kind: Deployment\n", "README.md": "app\n"}))
	second := must(repo.Commit("main", "drop the readme", testgit.Files{"README.md": testgit.Delete}))
	feature := must(repo.Commit("feature", "try a change", testgit.Files{"deploy/web.yaml": "kind: Deployment # v2\n"}))
	head := must(repo.Head("main"))
	fmt.Println(first[:12], second[:12], feature[:12])
	fmt.Println("main is at the second commit:", head == second)
	// Output:
	// d8f837a45553 7bb3ea318628 6daa92324d35
	// main is at the second commit: true
}
