package bootstrap

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-billy/v5/memfs"
	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/storage/memory"
)

// Commit is what Push left on the branch.
type Commit struct {
	// Hash is the branch's head after Push: the new commit, or the one
	// already there when nothing changed.
	Hash string
	// Changed is false when the files were already as rendered and
	// nothing was committed or pushed.
	Changed bool
	// KnownHosts is the known_hosts line of the SSH host's key as the
	// push saw it (checked against Auth.KnownHosts when that was given):
	// what the GitRepository's Secret must trust. Empty for http(s).
	KnownHosts []byte
}

// Revision is the commit as source-controller names it in a
// GitRepository's artifact: <branch>@sha1:<hash>.
func (c Commit) Revision(branch string) string { return branch + "@sha1:" + c.Hash }

// Push clones the branch into memory (creating it when the repository or
// the branch has none yet), writes files, and commits and pushes them when
// anything differs from what the branch holds. Files already there that
// files does not name stay as they are.
func Push(ctx context.Context, o Options, files map[string][]byte, progress io.Writer) (Commit, error) {
	if err := o.Validate(); err != nil {
		return Commit{}, err
	}
	auth, host, err := o.Auth.transport(o.URL)
	if err != nil {
		return Commit{}, err
	}
	repo, wt, err := checkout(ctx, o, auth)
	if err != nil {
		return Commit{}, err
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if err := writeFile(wt.Filesystem, name, files[name]); err != nil {
			return Commit{}, err
		}
		if _, err := wt.Add(name); err != nil {
			return Commit{}, fmt.Errorf("adding %s: %w", name, err)
		}
	}
	status, err := wt.Status()
	if err != nil {
		return Commit{}, err
	}
	if status.IsClean() {
		head, err := repo.Head()
		if err != nil {
			return Commit{}, err
		}
		return Commit{Hash: head.Hash().String(), KnownHosts: host.known()}, nil
	}
	msg := "Add Plumb " + o.Install.Version + " sync manifests"
	if o.CommitMessageAppendix != "" {
		msg += "\n\n" + o.CommitMessageAppendix
	}
	hash, err := wt.Commit(msg, &git.CommitOptions{Author: o.Author.signature()})
	if err != nil {
		return Commit{}, fmt.Errorf("committing: %w", err)
	}
	ref := plumbing.NewBranchReferenceName(o.Branch)
	err = repo.PushContext(ctx, &git.PushOptions{
		RemoteName: git.DefaultRemoteName,
		RefSpecs:   []config.RefSpec{config.RefSpec(ref + ":" + ref)},
		Auth:       auth,
		CABundle:   o.Auth.CA,
		Progress:   progress,
	})
	if err != nil {
		return Commit{}, fmt.Errorf("pushing to %s %s: %w", o.URL, o.Branch, err)
	}
	return Commit{Hash: hash.String(), Changed: true, KnownHosts: host.known()}, nil
}

// checkout clones o.Branch into memory. An empty repository is
// initialised with the branch; a repository without the branch has it
// created from its default branch's head.
func checkout(ctx context.Context, o Options, auth transport.AuthMethod) (*git.Repository, *git.Worktree, error) {
	ref := plumbing.NewBranchReferenceName(o.Branch)
	fs := memfs.New()
	repo, err := git.CloneContext(ctx, memory.NewStorage(), fs, &git.CloneOptions{
		URL:           o.URL,
		Auth:          auth,
		CABundle:      o.Auth.CA,
		ReferenceName: ref,
		SingleBranch:  true,
	})
	switch {
	case err == nil:
		wt, err := repo.Worktree()
		return repo, wt, err
	case errors.Is(err, transport.ErrEmptyRemoteRepository):
		return initBranch(o, ref)
	case isMissingBranch(err):
		return branchFromDefault(ctx, o, auth, ref)
	default:
		return nil, nil, fmt.Errorf("cloning %s: %w", o.URL, err)
	}
}

func isMissingBranch(err error) bool {
	var noMatch git.NoMatchingRefSpecError
	return errors.As(err, &noMatch) || errors.Is(err, plumbing.ErrReferenceNotFound) ||
		strings.Contains(err.Error(), "couldn't find remote ref")
}

// initBranch starts the history of an empty repository on ref.
func initBranch(o Options, ref plumbing.ReferenceName) (*git.Repository, *git.Worktree, error) {
	repo, err := git.InitWithOptions(memory.NewStorage(), memfs.New(), git.InitOptions{DefaultBranch: ref})
	if err != nil {
		return nil, nil, err
	}
	if _, err := repo.CreateRemote(&config.RemoteConfig{Name: git.DefaultRemoteName, URLs: []string{o.URL}}); err != nil {
		return nil, nil, err
	}
	wt, err := repo.Worktree()
	return repo, wt, err
}

// branchFromDefault clones the default branch and starts ref at its head.
func branchFromDefault(ctx context.Context, o Options, auth transport.AuthMethod, ref plumbing.ReferenceName) (*git.Repository, *git.Worktree, error) {
	repo, err := git.CloneContext(ctx, memory.NewStorage(), memfs.New(), &git.CloneOptions{
		URL: o.URL, Auth: auth, CABundle: o.Auth.CA, SingleBranch: true,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("cloning %s: %w", o.URL, err)
	}
	head, err := repo.Head()
	if err != nil {
		return nil, nil, err
	}
	wt, err := repo.Worktree()
	if err != nil {
		return nil, nil, err
	}
	if err := wt.Checkout(&git.CheckoutOptions{Hash: head.Hash(), Branch: ref, Create: true}); err != nil {
		return nil, nil, fmt.Errorf("creating branch %s: %w", ref.Short(), err)
	}
	return repo, wt, nil
}

func writeFile(fs billy.Filesystem, name string, data []byte) error {
	if err := fs.MkdirAll(path.Dir(name), 0o755); err != nil {
		return err
	}
	f, err := fs.OpenFile(name, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, bytes.NewReader(data)); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// transport is the push's authentication for url, and for ssh:// the
// host key it meets.
func (a Auth) transport(url string) (transport.AuthMethod, *sshHost, error) {
	switch {
	case isSSH(url):
		return a.sshAuth(url)
	case a.BearerToken != "":
		return &githttp.TokenAuth{Token: a.BearerToken}, nil, nil
	case a.Username != "" || a.Password != "":
		return &githttp.BasicAuth{Username: a.Username, Password: a.Password}, nil, nil
	}
	return nil, nil, nil
}

// signature is the commit's author and committer, Plumb's when unset.
func (a Author) signature() *object.Signature {
	s := &object.Signature{Name: a.Name, Email: a.Email, When: time.Now()}
	if s.Name == "" {
		s.Name = "Plumb"
	}
	return s
}
