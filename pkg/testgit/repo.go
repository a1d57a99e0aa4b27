package testgit

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/go-git/go-billy/v5/memfs"
	"github.com/go-git/go-billy/v5/osfs"
	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/index"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"golang.org/x/crypto/ssh"

	"plumb.dev/pkg/sshsig"
)

// DefaultBranch is the branch a new repository's HEAD points to.
const DefaultBranch = "main"

// Files maps slash-separated paths to contents. A path ending in "*" is
// committed as an executable file (the "*" is dropped).
type Files map[string]string

// Repo is one bare repository of a Server.
type Repo struct {
	srv  *Server
	name string
	dir  string

	mu    sync.Mutex
	clock time.Time
	last  plumbing.Hash
	// signKey signs the commits and annotated tags made from now on; nil
	// leaves them unsigned.
	signKey *openpgp.Entity
	// sshKey, when set, signs them instead with an SSH signature.
	sshKey ssh.Signer
}

// CreateRepo creates an empty bare repository served as <name>.git.
func (s *Server) CreateRepo(name string) (*Repo, error) {
	if !repoName.MatchString(name) {
		return nil, fmt.Errorf("invalid repository name %q", name)
	}
	dir := s.repoDir(name)
	if _, err := os.Stat(dir); err == nil {
		return nil, fmt.Errorf("repository %s exists", name)
	}
	_, err := git.PlainInitWithOptions(dir, &git.PlainInitOptions{
		Bare:        true,
		InitOptions: git.InitOptions{DefaultBranch: plumbing.NewBranchReferenceName(DefaultBranch)},
	})
	if err != nil {
		return nil, fmt.Errorf("creating repository %s: %w", name, err)
	}
	return &Repo{srv: s, name: name, dir: dir, clock: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)}, nil
}

// Name returns the repository's name.
func (r *Repo) Name() string { return r.name }

// URL returns the repository's HTTP URL (HTTPS with Options.TLS).
func (r *Repo) URL() string { return r.srv.HTTPAddress() + "/" + r.name + ".git" }

// SSHURL returns the repository's SSH URL; StartSSH must have been called.
func (r *Repo) SSHURL() string {
	if r.srv.ssh == nil {
		return ""
	}
	return "ssh://git@" + r.srv.ssh.addr() + "/" + r.name + ".git"
}

// Fetches returns how many pack negotiations the repository served.
func (r *Repo) Fetches() int { return r.srv.Fetches(r.name) }

func (r *Repo) open() (*git.Repository, error) {
	st := filesystem.NewStorage(osfs.New(r.dir), cache.NewObjectLRUDefault())
	return git.Open(st, memfs.New())
}

// Commit commits files onto branch and returns the commit hash. A new
// branch starts at the default branch's head, or else at the last commit
// made through this Repo, or else as an orphan. The files are written over
// the branch's tree; the content Delete removes a path. With no files it
// makes an empty commit (the same tree at a new commit).
func (r *Repo) Commit(branch, message string, files Files) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	repo, err := r.open()
	if err != nil {
		return "", err
	}
	wt, err := repo.Worktree()
	if err != nil {
		return "", err
	}
	ref := plumbing.NewBranchReferenceName(branch)
	headBefore, _ := repo.Storer.Reference(plumbing.HEAD)
	if err := r.checkout(repo, wt, ref); err != nil {
		return "", err
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	fs := wt.Filesystem
	for _, name := range names {
		content := files[name]
		mode := os.FileMode(0o644)
		if len(name) > 0 && name[len(name)-1] == '*' {
			name, mode = name[:len(name)-1], 0o755
		}
		name = path.Clean(name)
		if content == Delete {
			if _, err := wt.Remove(name); err != nil {
				return "", fmt.Errorf("removing %s: %w", name, err)
			}
			continue
		}
		if commit, ok := strings.CutPrefix(content, gitlinkPrefix); ok {
			if err := addGitlink(repo, name, plumbing.NewHash(commit)); err != nil {
				return "", err
			}
			continue
		}
		if err := fs.MkdirAll(path.Dir(name), 0o755); err != nil {
			return "", err
		}
		f, err := fs.OpenFile(name, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, mode)
		if err != nil {
			return "", err
		}
		if _, err := f.Write([]byte(content)); err != nil {
			f.Close()
			return "", err
		}
		if err := f.Close(); err != nil {
			return "", err
		}
		if _, err := wt.Add(name); err != nil {
			return "", fmt.Errorf("adding %s: %w", name, err)
		}
	}
	// A distinct, increasing time per commit keeps hashes unique and
	// ordered without depending on the wall clock.
	r.clock = r.clock.Add(time.Minute)
	h, err := wt.Commit(message, &git.CommitOptions{
		Author:            r.signature(),
		AllowEmptyCommits: true,
		SignKey:           r.signKey,
		Signer:            r.sshSigner(),
	})
	if err != nil {
		return "", fmt.Errorf("committing to %s: %w", branch, err)
	}
	r.last = h
	if err := restoreHead(repo, headBefore, ref); err != nil {
		return "", err
	}
	return h.String(), nil
}

// SignWith makes Commit and Tag sign the commits and annotated tags they
// make from now on with key (OpenPGP, its private key decrypted); nil
// stops signing. A signature holds its creation time, so signed commits
// do not have reproducible hashes.
func (r *Repo) SignWith(key *openpgp.Entity) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.signKey = key
	r.sshKey = nil
}

// SignWithSSH makes Commit and Tag sign the commits and annotated tags
// they make from now on with an SSH signature by key (as Git does with
// gpg.format=ssh); nil stops signing.
func (r *Repo) SignWithSSH(key ssh.Signer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sshKey = key
	r.signKey = nil
}

// gitSSHSigner signs Git objects in Git's namespace, for go-git.
type gitSSHSigner struct{ key ssh.Signer }

func (s gitSSHSigner) Sign(message io.Reader) ([]byte, error) {
	return sshsig.Sign(s.key, "git", message)
}

// sshSigner is the go-git Signer of sshKey; nil when it is not set.
func (r *Repo) sshSigner() git.Signer {
	if r.sshKey == nil {
		return nil
	}
	return gitSSHSigner{r.sshKey}
}

// sshSignedTag writes the annotated tag name on rev with an SSH
// signature, which go-git's CreateTag cannot make (it signs with OpenPGP
// only).
func (r *Repo) sshSignedTag(repo *git.Repository, name string, rev plumbing.Hash, message string) error {
	target, err := repo.CommitObject(rev)
	if err != nil {
		return err
	}
	// A signature follows the message on a line of its own, as
	// CreateTagOptions.Validate makes sure for OpenPGP.
	if !strings.HasSuffix(message, "\n") {
		message += "\n"
	}
	tag := &object.Tag{Name: name, Tagger: *r.signature(), Message: message, TargetType: plumbing.CommitObject, Target: target.Hash}
	unsigned := &plumbing.MemoryObject{}
	if err := tag.EncodeWithoutSignature(unsigned); err != nil {
		return err
	}
	rd, err := unsigned.Reader()
	if err != nil {
		return err
	}
	sig, err := gitSSHSigner{r.sshKey}.Sign(rd)
	if err != nil {
		return err
	}
	tag.PGPSignature = string(sig)
	obj := repo.Storer.NewEncodedObject()
	if err := tag.Encode(obj); err != nil {
		return err
	}
	h, err := repo.Storer.SetEncodedObject(obj)
	if err != nil {
		return err
	}
	return repo.Storer.SetReference(plumbing.NewHashReference(plumbing.NewTagReferenceName(name), h))
}

// Delete, as the content of a path in Files, removes the path.
const Delete = "\x00delete"

const gitlinkPrefix = "\x00gitlink "

// Gitlink, as the content of a path in Files, makes the path a submodule
// pinned at commit (a hash), as `git submodule add` does; the URL goes in
// a .gitmodules of the same Files.
func Gitlink(commit string) string { return gitlinkPrefix + commit }

// addGitlink puts a submodule entry for name at commit in the index, which
// the next commit's tree is built from (go-git's Add cannot make one).
func addGitlink(repo *git.Repository, name string, commit plumbing.Hash) error {
	idx, err := repo.Storer.Index()
	if err != nil {
		return err
	}
	if e, err := idx.Entry(name); err == nil {
		e.Hash, e.Mode = commit, filemode.Submodule
	} else {
		idx.Entries = append(idx.Entries, &index.Entry{Name: name, Hash: commit, Mode: filemode.Submodule})
	}
	return repo.Storer.SetIndex(idx)
}

func (r *Repo) signature() *object.Signature {
	return &object.Signature{Name: "Plumb Test", Email: "test@plumb.dev", When: r.clock}
}

// checkout points HEAD at ref and the worktree at its tree. A branch that
// does not exist yet starts at the default branch's head, or else at the
// last commit made through this Repo, or else (empty repository) as an
// orphan.
func (r *Repo) checkout(repo *git.Repository, wt *git.Worktree, ref plumbing.ReferenceName) error {
	if _, err := repo.Reference(ref, false); err == nil {
		return wt.Checkout(&git.CheckoutOptions{Branch: ref, Force: true})
	} else if !errors.Is(err, plumbing.ErrReferenceNotFound) {
		return err
	}
	base := r.last
	if def, err := repo.Reference(plumbing.NewBranchReferenceName(DefaultBranch), true); err == nil {
		base = def.Hash()
	}
	if base.IsZero() {
		return repo.Storer.SetReference(plumbing.NewSymbolicReference(plumbing.HEAD, ref))
	}
	return wt.Checkout(&git.CheckoutOptions{Branch: ref, Hash: base, Create: true, Force: true})
}

// restoreHead points the served HEAD back at the branch it named before a
// commit; when that branch does not exist (an empty repository whose first
// commit went to another branch), HEAD names the branch just committed to.
func restoreHead(repo *git.Repository, before *plumbing.Reference, committed plumbing.ReferenceName) error {
	target := committed
	if before != nil && before.Type() == plumbing.SymbolicReference {
		if _, err := repo.Reference(before.Target(), false); err == nil {
			target = before.Target()
		}
	}
	return repo.Storer.SetReference(plumbing.NewSymbolicReference(plumbing.HEAD, target))
}

// Tag creates a tag on the commit rev (a hash). With a message the tag is
// annotated, without it is lightweight.
func (r *Repo) Tag(name, rev, message string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	repo, err := r.open()
	if err != nil {
		return err
	}
	var opts *git.CreateTagOptions
	if message != "" {
		r.clock = r.clock.Add(time.Second)
		if r.sshKey != nil {
			return r.sshSignedTag(repo, name, plumbing.NewHash(rev), message)
		}
		opts = &git.CreateTagOptions{Tagger: r.signature(), Message: message, SignKey: r.signKey}
	}
	if _, err := repo.CreateTag(name, plumbing.NewHash(rev), opts); err != nil {
		return fmt.Errorf("tagging %s as %s: %w", rev, name, err)
	}
	return nil
}

// Head returns the commit hash a branch points to.
func (r *Repo) Head(branch string) (string, error) {
	repo, err := r.open()
	if err != nil {
		return "", err
	}
	ref, err := repo.Reference(plumbing.NewBranchReferenceName(branch), true)
	if err != nil {
		return "", err
	}
	return ref.Hash().String(), nil
}

// SetRef points any reference (e.g. refs/pull/1/head) at a commit.
func (r *Repo) SetRef(name, rev string) error {
	repo, err := r.open()
	if err != nil {
		return err
	}
	return repo.Storer.SetReference(plumbing.NewHashReference(plumbing.ReferenceName(name), plumbing.NewHash(rev)))
}
