package git

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/Masterminds/semver/v3"
	"github.com/go-git/go-billy/v5/osfs"
	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/go-git/go-git/v5/storage/memory"

	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/diskbudget"
	"plumb.dev/pkg/gitreach"
	"plumb.dev/pkg/message"
	"plumb.dev/pkg/netguard"
)

// Kind classifies a fetch error.
type Kind int

const (
	// Failed is any other Git or network failure; retrying may help.
	Failed Kind = iota
	// AuthFailed: credentials refused, missing or unreadable, or the SSH
	// host key is unknown.
	AuthFailed
	// NotFound: the reference (or the repository) does not exist.
	NotFound
	// InvalidSpec: the spec cannot work (e.g. an invalid semver range);
	// only a spec change helps.
	InvalidSpec
	// TooLarge: the repository needs more disk than the size limit allows;
	// only another commit (or a higher limit) helps.
	TooLarge
	// Insecure: the server redirected an https:// URL to plain http://,
	// which is refused before anything is sent there; only a change of the
	// server or of spec.url helps.
	Insecure
)

// Error is a classified fetch error. Its message never holds the user
// info of a URL (user:password@): a URL with credentials in it, and the
// errors of go-git and net/http that quote it, are shown without them.
type Error struct {
	Kind Kind
	Err  error
}

func (e *Error) Error() string { return message.StripUserInfo(e.Err.Error()) }

// wrap classifies err as Failed unless it is classified already, so that
// every error leaving this package is an *Error and shows no credentials.
func wrap(err error) error {
	var e *Error
	if err == nil || errors.As(err, &e) {
		return err
	}
	return &Error{Kind: Failed, Err: err}
}
func (e *Error) Unwrap() error { return e.Err }

// KindOf returns the kind of err (Failed when unclassified).
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return Failed
}

// Refs maps full reference names to commit hashes; annotated tags are
// peeled to the commit they point to.
type Refs map[string]string

// ListRefs asks the remote for its references (git ls-remote).
func ListRefs(ctx context.Context, url string, auth *Auth) (Refs, error) {
	c, err := reach(ctx, url, auth)
	if err != nil {
		return nil, classify(url, "listing references of", err)
	}
	defer c.done()
	rem := gogit.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: "origin", URLs: []string{c.url}})
	list, err := rem.ListContext(c.ctx, &gogit.ListOptions{
		Auth:          c.auth,
		PeelingOption: gogit.AppendPeeled,
	})
	if err != nil {
		return nil, classify(url, "listing references of", err)
	}
	refs := Refs{}
	peeled := map[string]string{}
	for _, r := range list {
		if r.Type() != plumbing.HashReference {
			continue
		}
		name := r.Name().String()
		if base, ok := strings.CutSuffix(name, "^{}"); ok {
			peeled[base] = r.Hash().String()
			continue
		}
		refs[name] = r.Hash().String()
	}
	for name, h := range peeled {
		refs[name] = h
	}
	return refs, nil
}

// Target is a resolved reference: what to fetch and which commit to check out.
type Target struct {
	// RefName is the reference to fetch, e.g. refs/heads/main; empty for a
	// bare commit (all branches and tags are fetched).
	RefName string
	// Commit is the commit to check out; for a moving reference it is the
	// head seen by ListRefs and is confirmed by the fetch.
	Commit string
	// Label is the part of the revision before "@", empty for a bare commit.
	Label string
	// Shallow is true when a depth-1 fetch is enough.
	Shallow bool
}

// Revision returns "<label>@sha1:<commit>" or "sha1:<commit>".
func (t Target) Revision() string {
	if t.Label == "" {
		return "sha1:" + t.Commit
	}
	return t.Label + "@sha1:" + t.Commit
}

// DefaultBranch is checked out when a GitRepository has no ref, as in Flux.
const DefaultBranch = "master"

// Resolve picks the target of ref among the remote's refs. The most
// specific field wins: commit, then name, then semver, then tag, then branch.
// refs may be nil for a bare commit, which needs no listing.
func Resolve(ref *sourcev1.GitRepositoryRef, refs Refs) (Target, error) {
	if ref == nil {
		ref = &sourcev1.GitRepositoryRef{}
	}
	switch {
	case ref.Commit != "":
		if !isHash(ref.Commit) {
			return Target{}, &Error{Kind: InvalidSpec, Err: fmt.Errorf("spec.ref.commit %q is not a full SHA-1 commit hash", ref.Commit)}
		}
		if ref.Branch == "" {
			return Target{Commit: ref.Commit}, nil
		}
		name := "refs/heads/" + ref.Branch
		if _, ok := refs[name]; !ok {
			return Target{}, notFound("branch %q", ref.Branch)
		}
		return Target{RefName: name, Commit: ref.Commit, Label: ref.Branch}, nil
	case ref.Name != "":
		if !strings.HasPrefix(ref.Name, "refs/") {
			return Target{}, &Error{Kind: InvalidSpec, Err: fmt.Errorf("spec.ref.name %q must be a full reference name starting with refs/", ref.Name)}
		}
		h, ok := refs[ref.Name]
		if !ok {
			return Target{}, notFound("reference %q", ref.Name)
		}
		return Target{RefName: ref.Name, Commit: h, Label: ref.Name, Shallow: true}, nil
	case ref.SemVer != "":
		c, err := semver.NewConstraint(ref.SemVer)
		if err != nil {
			return Target{}, &Error{Kind: InvalidSpec, Err: fmt.Errorf("spec.ref.semver %q is not a valid semver range: %w", ref.SemVer, err)}
		}
		tag, err := highestMatch(c, refs)
		if err != nil {
			return Target{}, err
		}
		name := "refs/tags/" + tag
		return Target{RefName: name, Commit: refs[name], Label: tag, Shallow: true}, nil
	case ref.Tag != "":
		name := "refs/tags/" + ref.Tag
		h, ok := refs[name]
		if !ok {
			return Target{}, notFound("tag %q", ref.Tag)
		}
		return Target{RefName: name, Commit: h, Label: ref.Tag, Shallow: true}, nil
	default:
		branch := ref.Branch
		if branch == "" {
			branch = DefaultBranch
		}
		name := "refs/heads/" + branch
		h, ok := refs[name]
		if !ok {
			return Target{}, notFound("branch %q", branch)
		}
		return Target{RefName: name, Commit: h, Label: branch, Shallow: true}, nil
	}
}

func notFound(format string, args ...any) error {
	return &Error{Kind: NotFound, Err: fmt.Errorf(format+" not found in the remote repository", args...)}
}

// highestMatch returns the tag with the highest version matching c. Tags
// that are not versions are skipped; of two tags with the same version
// ("1.0.0" and "v1.0.0") the lexically greater wins, so the choice is stable.
func highestMatch(c *semver.Constraints, refs Refs) (string, error) {
	type cand struct {
		tag string
		v   *semver.Version
	}
	var cands []cand
	for name := range refs {
		tag, ok := strings.CutPrefix(name, "refs/tags/")
		if !ok {
			continue
		}
		v, err := semver.NewVersion(tag)
		if err != nil || !c.Check(v) {
			continue
		}
		cands = append(cands, cand{tag, v})
	}
	if len(cands) == 0 {
		return "", notFound("no tag matching semver range %q was", c.String())
	}
	sort.Slice(cands, func(i, j int) bool {
		if cmp := cands[i].v.Compare(cands[j].v); cmp != 0 {
			return cmp > 0
		}
		return cands[i].tag > cands[j].tag
	})
	return cands[0].tag, nil
}

func isHash(s string) bool {
	if len(s) != 40 {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// CheckoutOptions tune Checkout.
type CheckoutOptions struct {
	// MaxSize bounds the bytes written under the checkout folder, Git
	// objects and files; DefaultMaxSize when not positive.
	MaxSize int64
	// Directories, when set, are the only folders checked out (a sparse
	// checkout, spec.sparseCheckout): paths relative to the repository
	// root, "./" optional. Each must be a folder of the commit.
	Directories []string
	// RecurseSubmodules also checks out the submodules of the commit,
	// recursively (spec.recurseSubmodules), under the same budget, context
	// and address policy; see checkoutSubmodules.
	RecurseSubmodules bool
}

// Checkout fetches t from url into a new repository at dir and checks its
// commit out. It returns the target with Commit set to what was checked out
// (a branch may have moved since ListRefs).
//
// Everything written under dir, the Git objects as they arrive and then the
// checked-out files, counts against opts.MaxSize bytes; the first write past
// it fails the fetch or the checkout with a TooLarge error. With
// opts.Directories only those folders are written; one that the commit does
// not have fails the checkout with a NotFound error, since an artifact
// without it would look like a deletion of everything it holds.
func Checkout(ctx context.Context, url string, auth *Auth, t Target, dir string, opts CheckoutOptions) (Target, error) {
	budget := diskbudget.New(orDefault(opts.MaxSize))
	sparse := sparseDirs(opts.Directories)
	repo, err := checkoutRepo(ctx, url, auth, &t, dir, budget, sparse)
	if err == nil && opts.RecurseSubmodules {
		count := 0
		err = checkoutSubmodules(ctx, repo, url, url, plumbing.NewHash(t.Commit), dir, auth, budget, sparse, 0, &count)
	}
	if budget.Exceeded() {
		return t, TooLargeError(t, opts.MaxSize)
	}
	return t, wrap(err)
}

// sparseDirs turns spec.sparseCheckout into go-git's patterns. go-git
// keeps every index entry whose path starts with a pattern, so "app" would
// also check out "apps/" and "app.yaml": each folder gets a trailing slash.
func sparseDirs(dirs []string) []string {
	if len(dirs) == 0 {
		return nil
	}
	out := make([]string, 0, len(dirs))
	for _, d := range dirs {
		d = path.Clean(strings.TrimPrefix(d, "./"))
		if d == "." {
			// The root is the whole tree: no sparse checkout at all.
			return nil
		}
		out = append(out, d+"/")
	}
	return out
}

// checkSparseDirs fails when a sparse folder is not a folder of the
// checkout at dir (missing in the commit, or a file or link there).
func checkSparseDirs(dir, commit string, patterns []string) error {
	for _, p := range patterns {
		d := strings.TrimSuffix(p, "/")
		// The CRD refuses these; checked again before any look at the
		// disk, so that no path outside the checkout is ever read.
		if path.IsAbs(d) || d == ".." || strings.HasPrefix(d, "../") {
			return fmt.Errorf("spec.sparseCheckout directory %q is not inside the repository", d)
		}
		fi, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(d)))
		if err != nil || !fi.IsDir() {
			return notFound("spec.sparseCheckout directory %q in commit %s", d, commit)
		}
	}
	return nil
}

// TooLargeError is the error of Checkout when t needs more than maxSize
// bytes of disk (DefaultMaxSize when not positive). The same target and
// limit always give the same message, so a caller can tell that a
// revision was already refused.
func TooLargeError(t Target, maxSize int64) error {
	return &Error{Kind: TooLarge, Err: fmt.Errorf(
		"fetching and checking out %s passes the limit of %d bytes on disk per repository (--max-repository-size)",
		t.Revision(), orDefault(maxSize))}
}

func orDefault(maxSize int64) int64 {
	if maxSize <= 0 {
		return DefaultMaxSize
	}
	return maxSize
}

// checkoutRepo fetches t into a new repository at dir and checks it out,
// setting t.Commit to what was checked out.
func checkoutRepo(ctx context.Context, url string, auth *Auth, t *Target, dir string, budget *diskbudget.Budget, sparse []string) (*gogit.Repository, error) {
	// gogit.PlainInit's layout, with every write charged to the budget.
	files := diskbudget.FS(osfs.New(dir), budget)
	dot, err := files.Chroot(gogit.GitDirName)
	if err != nil {
		return nil, err
	}
	repo, err := gogit.Init(filesystem.NewStorage(dot, cache.NewObjectLRUDefault()), files)
	if err != nil {
		return nil, err
	}
	c, err := reach(ctx, url, auth)
	if err != nil {
		return nil, classify(url, "fetching from", err)
	}
	defer c.done()
	if _, err := repo.CreateRemote(&config.RemoteConfig{Name: "origin", URLs: []string{c.url}}); err != nil {
		return nil, err
	}
	opts := &gogit.FetchOptions{
		RemoteName: "origin",
		Auth:       c.auth,
		Tags:       gogit.NoTags,
	}
	if t.RefName != "" {
		opts.RefSpecs = []config.RefSpec{config.RefSpec("+" + t.RefName + ":" + t.RefName)}
	} else {
		opts.RefSpecs = []config.RefSpec{"+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*"}
	}
	if t.Shallow {
		opts.Depth = 1
	}
	if err := repo.FetchContext(c.ctx, opts); err != nil && !errors.Is(err, gogit.NoErrAlreadyUpToDate) {
		return nil, classify(url, "fetching from", err)
	}

	if t.Shallow {
		// Check out what the fetch brought, peeling annotated tags.
		h, err := repo.ResolveRevision(plumbing.Revision(t.RefName + "^{commit}"))
		if err != nil {
			return nil, &Error{Kind: NotFound, Err: fmt.Errorf("%s vanished from the remote during the fetch: %w", t.RefName, err)}
		}
		t.Commit = h.String()
	} else {
		commit, err := repo.CommitObject(plumbing.NewHash(t.Commit))
		if err != nil {
			return nil, notFound("commit %s", t.Commit)
		}
		if t.RefName != "" {
			if err := onBranch(repo, t.RefName, commit); err != nil {
				return nil, err
			}
		}
	}
	wt, err := repo.Worktree()
	if err != nil {
		return nil, err
	}
	if err := wt.Checkout(&gogit.CheckoutOptions{
		Hash:                      plumbing.NewHash(t.Commit),
		Force:                     true,
		SparseCheckoutDirectories: sparse,
	}); err != nil {
		return nil, fmt.Errorf("checking out %s: %w", t.Commit, err)
	}
	return repo, checkSparseDirs(dir, t.Commit, sparse)
}

// onBranch checks that commit is reachable from the branch head.
func onBranch(repo *gogit.Repository, refName string, commit *object.Commit) error {
	head, err := repo.Reference(plumbing.ReferenceName(refName), true)
	if err != nil {
		return notFound("branch %q", strings.TrimPrefix(refName, "refs/heads/"))
	}
	headCommit, err := repo.CommitObject(head.Hash())
	if err != nil {
		return err
	}
	if headCommit.Hash == commit.Hash {
		return nil
	}
	ok, err := commit.IsAncestor(headCommit)
	if err != nil {
		return err
	}
	if !ok {
		return notFound("commit %s on branch %q", commit.Hash, strings.TrimPrefix(refName, "refs/heads/"))
	}
	return nil
}

// classify wraps a go-git error with the URL and a kind.
func classify(url, what string, err error) error {
	var classified *Error
	if errors.As(err, &classified) {
		return &Error{Kind: classified.Kind, Err: fmt.Errorf("%s %s: %w", what, url, classified.Err)}
	}
	kind := Failed
	msg := err.Error()
	var netErr net.Error
	var refused *netguard.RefusedAddressError
	switch {
	case errors.As(err, &refused):
		// Before the network errors that wrap it: the message then
		// names the rule and the flag, without net/http's wrapping.
		msg = "cannot connect: " + refused.Error()
	case gitreach.RefusalOf(err) == gitreach.CredentialsRefused:
		kind = AuthFailed
		msg = "the credentials were refused (" + err.Error() + ")"
	case gitreach.RefusalOf(err) == gitreach.HostKeyUnknown:
		kind = AuthFailed
		msg = "the SSH host key is not in known_hosts (unknown host or changed key): " + err.Error()
	case gitreach.RefusalOf(err) == gitreach.SSHKeyRefused:
		kind = AuthFailed
		msg = "the SSH key was refused (" + err.Error() + ")"
	case errors.Is(err, transport.ErrRepositoryNotFound):
		kind = NotFound
		msg = "the repository does not exist"
	case errors.Is(err, transport.ErrEmptyRemoteRepository):
		kind = NotFound
		msg = "the repository is empty"
	case strings.Contains(msg, "http redirect: changes scheme"):
		// go-git refuses the hop before it leaves the client: nothing,
		// credentials included, reached the plain-HTTP address.
		kind = Insecure
		msg = "the server redirected https:// to plain http://, and a repository asked for over https:// is never fetched, nor sent credentials, in clear (" + msg + ")"
	case errors.Is(err, context.DeadlineExceeded):
		msg = "the Git operation timed out (spec.timeout)"
	case errors.As(err, &netErr):
		msg = "cannot reach the server: " + err.Error()
	}
	return &Error{Kind: kind, Err: fmt.Errorf("%s %s: %s", what, url, msg)}
}
