package imageupdate

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"golang.org/x/crypto/ssh"

	"plumb.dev/pkg/diskbudget"
	"plumb.dev/pkg/message"
)

// Remote is the repository and how to reach it: the GitRepository's URL
// and the auth built from its secretRef and proxySecretRef.
type Remote struct {
	URL      string
	Auth     transport.AuthMethod
	CABundle []byte
	Proxy    transport.ProxyOptions
}

// Ref is git.checkout.ref, or the GitRepository's ref when the
// automation has none: exactly one of Branch, Tag or Commit (a full
// hash); the caller resolves a semver range or a ref name to a tag or a
// commit.
type Ref struct {
	Branch, Tag, Commit string
}

// Author is git.commit.author; it is also the committer.
type Author struct {
	Name, Email string
}

// Push is git.push.
type Push struct {
	// Branch receives the commit; empty: the checkout's branch.
	Branch string
	// Refspec is pushed as well, its source a local branch (the push
	// branch, or the checkout's): refs/heads/main:refs/for/main.
	Refspec string
	// Options are git push options (git push -o key=value).
	Options map[string]string
}

// DefaultMaxAttempts bounds the pushes of one run: each lost race
// against another writer costs a fetch and a new commit.
const DefaultMaxAttempts = 4

// Options are one run of an ImageUpdateAutomation.
type Options struct {
	Remote   Remote
	Checkout Ref
	// Dir is an empty folder that receives the clone; the caller removes
	// it.
	Dir string

	// UpdatePath is update.path, relative to the repository's root.
	UpdatePath string
	// Policies are the latest refs of the selected ImagePolicies, keyed
	// by "namespace:name".
	Policies map[string]ImageRef
	Limits   Limits

	Author     Author
	SigningKey *openpgp.Entity // nil: unsigned
	// SSHSigningKey signs with an SSH signature instead (Git's
	// gpg.format=ssh); at most one of the two is set.
	SSHSigningKey ssh.Signer
	// Message renders the commit message; nil: DefaultMessageTemplate.
	Message    *MessageTemplate
	Automation AutomationObject
	Values     map[string]string // messageTemplateValues

	Push Push
	// MaxAttempts bounds the pushes (DefaultMaxAttempts when zero).
	MaxAttempts int

	// beforePush runs between the commit and each push: tests make the
	// remote move there.
	beforePush func(attempt int)
}

// Outcome is what a run did.
type Outcome struct {
	// Result is what the setters changed in the commit pushed; empty
	// when the repository was up to date (no commit).
	Result Result
	// Commit is the pushed commit's hash; "" when nothing was pushed.
	Commit string
	// Branch is the branch pushed to.
	Branch string
	// Message is the commit's message.
	Message string
	// Attempts counts the pushes tried.
	Attempts int
}

// ErrInvalid is wrapped by the errors of options no retry fixes (the
// automation is stalled until its spec changes).
var ErrInvalid = errors.New("invalid automation")

var branchName = regexp.MustCompile(`^[A-Za-z0-9._/-]+$`)

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// validate checks the options and names the branch the commit is made
// on and pushed to.
func (o *Options) validate() (string, error) {
	n := 0
	for _, s := range []string{o.Checkout.Branch, o.Checkout.Tag, o.Checkout.Commit} {
		if s != "" {
			n++
		}
	}
	if n != 1 {
		// The caller passes the GitRepository's ref when the automation
		// has none, resolved to one of the three.
		return "", invalid("git.checkout.ref must name one of branch, tag and commit")
	}
	if o.Checkout.Commit != "" && !plumbing.IsHash(o.Checkout.Commit) {
		return "", invalid("git.checkout.ref.commit %q is not a full commit hash", o.Checkout.Commit)
	}
	if o.SigningKey != nil && o.SSHSigningKey != nil {
		return "", invalid("a commit is signed with an OpenPGP or an SSH key, not both")
	}
	if o.Author.Email == "" {
		return "", invalid("git.commit.author.email is required")
	}
	branch := cmpOr(o.Push.Branch, o.Checkout.Branch)
	if branch == "" {
		return "", invalid("no branch to push to: the checkout is not a branch, so set git.push.branch")
	}
	for _, b := range []string{branch, o.Checkout.Branch} {
		if b != "" && (!branchName.MatchString(b) || strings.Contains(b, "..") || plumbing.NewBranchReferenceName(b).Validate() != nil) {
			return "", invalid("%q is not a branch name", b)
		}
	}
	if o.Push.Refspec != "" {
		rs := config.RefSpec(o.Push.Refspec)
		if err := rs.Validate(); err != nil || rs.IsForceUpdate() || rs.IsWildcard() || rs.IsDelete() {
			return "", invalid("git.push.refspec %q must be <local ref>:<remote ref>, without + (no force push) or wildcards", o.Push.Refspec)
		}
	}
	return branch, nil
}

// Run checks out the repository, runs the setters, commits what changed
// and pushes it, never forcing: when the push branch moved meanwhile it
// fetches the new head, runs the setters again on it and pushes again,
// up to MaxAttempts pushes (see the package doc).
func Run(ctx context.Context, o Options) (Outcome, error) {
	out, err := run(ctx, o)
	if err != nil {
		err = &runError{err}
	}
	return out, err
}

// runError shows no URL's user info (user:token@): go-git quotes URLs
// in its errors, and these errors reach status, events and logs.
type runError struct{ err error }

func (e *runError) Error() string { return message.StripUserInfo(e.err.Error()) }
func (e *runError) Unwrap() error { return e.err }

func run(ctx context.Context, o Options) (Outcome, error) {
	branch, err := o.validate()
	if err != nil {
		return Outcome{}, err
	}
	msg := o.Message
	if msg == nil {
		if msg, err = ParseMessageTemplate(""); err != nil {
			return Outcome{}, err
		}
	}
	maxAttempts := o.MaxAttempts
	if maxAttempts <= 0 {
		maxAttempts = DefaultMaxAttempts
	}

	budget := diskbudget.New(o.Limits.withDefaults().MaxRepositoryBytes)
	repo, head, err := clone(ctx, o, budget)
	if err != nil {
		return Outcome{}, err
	}
	local := plumbing.NewBranchReferenceName(branch)
	// The commit goes on the push branch's head when it exists (the
	// review-branch flow: never overwritten), else on the checkout.
	base := head
	if branch != o.Checkout.Branch {
		if h, found, err := fetchBranch(ctx, repo, o.Remote, branch); err != nil {
			return Outcome{}, overBudget(budget, err)
		} else if found {
			base = h
		}
	}

	wt, err := repo.Worktree()
	if err != nil {
		return Outcome{}, err
	}
	out := Outcome{Branch: branch}
	for attempt := 1; ; attempt++ {
		if err := repo.Storer.SetReference(plumbing.NewHashReference(local, base)); err != nil {
			return out, err
		}
		if err := wt.Checkout(&git.CheckoutOptions{Branch: local, Force: true}); err != nil {
			return out, fmt.Errorf("checking out %s at %s: %w", branch, base, err)
		}
		res, err := Setters(ctx, wt.Filesystem, o.UpdatePath, o.Policies, o.Limits)
		if err != nil {
			return out, overBudget(budget, err)
		}
		if res.Empty() {
			// Up to date, perhaps because the commit that beat ours
			// made the same change.
			return Outcome{Branch: branch, Attempts: out.Attempts}, nil
		}
		message, err := msg.Execute(NewTemplateData(o.Automation, res, o.Values))
		if err != nil {
			return out, fmt.Errorf("%w: %w", ErrInvalid, err)
		}
		for _, p := range res.paths {
			if _, err := wt.Add(p); err != nil {
				return out, fmt.Errorf("adding %s: %w", p, err)
			}
		}
		sig := &object.Signature{Name: o.Author.Name, Email: o.Author.Email, When: time.Now()}
		co := &git.CommitOptions{Author: sig, Committer: sig, SignKey: o.SigningKey}
		if o.SSHSigningKey != nil {
			co.Signer = sshCommitSigner{o.SSHSigningKey}
		}
		commit, err := wt.Commit(message, co)
		if err != nil {
			return out, fmt.Errorf("committing: %w", err)
		}
		out = Outcome{Result: res, Commit: commit.String(), Branch: branch, Message: message, Attempts: attempt}
		if attempt == 1 && len(o.Push.Options) > 0 {
			if err := checkPushOptions(ctx, o.Remote); err != nil {
				return Outcome{Branch: branch}, err
			}
		}
		if o.beforePush != nil {
			o.beforePush(attempt)
		}
		err = push(ctx, repo, o, local)
		if err == nil {
			return out, nil
		}
		// Did the branch move under us? Then build again on its new
		// head; any other failure is the caller's to report.
		moved, found, ferr := fetchBranch(ctx, repo, o.Remote, branch)
		if budget.Exceeded() {
			return out, overBudget(budget, ferr)
		}
		if ferr != nil || !found || moved == base {
			out.Commit = ""
			return out, fmt.Errorf("pushing to %s: %w", branch, err)
		}
		if attempt >= maxAttempts {
			out.Commit = ""
			return out, fmt.Errorf("pushing to %s: the branch kept moving; gave up after %d attempts: %w", branch, attempt, err)
		}
		base = moved
	}
}

// clone checks out o.Checkout: a branch or tag shallow, a commit from a
// full clone of every branch (a server need not serve a commit by hash).
func clone(ctx context.Context, o Options, budget *diskbudget.Budget) (*git.Repository, plumbing.Hash, error) {
	co := &git.CloneOptions{
		URL:          o.Remote.URL,
		Auth:         o.Remote.Auth,
		CABundle:     o.Remote.CABundle,
		ProxyOptions: o.Remote.Proxy,
		Tags:         git.NoTags,
	}
	switch {
	case o.Checkout.Branch != "":
		co.ReferenceName, co.SingleBranch, co.Depth = plumbing.NewBranchReferenceName(o.Checkout.Branch), true, 1
	case o.Checkout.Tag != "":
		co.ReferenceName, co.SingleBranch, co.Depth = plumbing.NewTagReferenceName(o.Checkout.Tag), true, 1
	case o.Checkout.Commit != "":
		co.NoCheckout = true
	}
	// PlainClone's layout, every write charged to the budget.
	files := diskbudget.FS(osfs.New(o.Dir), budget)
	dot, err := files.Chroot(git.GitDirName)
	if err != nil {
		return nil, plumbing.ZeroHash, err
	}
	repo, err := git.CloneContext(ctx, filesystem.NewStorage(dot, cache.NewObjectLRUDefault()), files, co)
	if err != nil {
		return nil, plumbing.ZeroHash, fmt.Errorf("cloning %s: %w", o.Remote.URL, overBudget(budget, err))
	}
	if o.Checkout.Commit != "" {
		h := plumbing.NewHash(o.Checkout.Commit)
		if _, err := repo.CommitObject(h); err != nil {
			return nil, plumbing.ZeroHash, fmt.Errorf("%w: commit %s is on no branch of %s", ErrInvalid, o.Checkout.Commit, o.Remote.URL)
		}
		return repo, h, nil
	}
	head, err := repo.Head()
	if err != nil {
		return nil, plumbing.ZeroHash, err
	}
	// A tag's HEAD is the commit it points to; an annotated tag is
	// peeled by the clone's checkout.
	return repo, head.Hash(), nil
}

// overBudget names the size limit when the budget refused a write,
// whatever go-git made of the refusal.
func overBudget(b *diskbudget.Budget, err error) error {
	if b.Exceeded() {
		return fmt.Errorf("%w: the checkout needs more than %d bytes of disk (Limits.MaxRepositoryBytes)", ErrLimit, b.Max())
	}
	return err
}

// fetchBranch fetches the remote's branch into refs/remotes/origin/<b>
// and returns its head; found is false when the remote has no such
// branch.
func fetchBranch(ctx context.Context, repo *git.Repository, r Remote, b string) (plumbing.Hash, bool, error) {
	dst := plumbing.NewRemoteReferenceName("origin", b)
	err := repo.FetchContext(ctx, &git.FetchOptions{
		RemoteURL:    r.URL,
		Auth:         r.Auth,
		CABundle:     r.CABundle,
		ProxyOptions: r.Proxy,
		RefSpecs:     []config.RefSpec{config.RefSpec("+" + plumbing.NewBranchReferenceName(b).String() + ":" + dst.String())},
		Depth:        1,
		Tags:         git.NoTags,
	})
	switch {
	case errors.Is(err, git.NoErrAlreadyUpToDate):
	case err != nil && isMissingRef(err):
		return plumbing.ZeroHash, false, nil
	case err != nil:
		return plumbing.ZeroHash, false, fmt.Errorf("fetching %s: %w", b, err)
	}
	ref, err := repo.Reference(dst, true)
	if err != nil {
		return plumbing.ZeroHash, false, nil
	}
	return ref.Hash(), true, nil
}

func isMissingRef(err error) bool {
	var noMatch git.NoMatchingRefSpecError
	return errors.As(err, &noMatch) || strings.Contains(err.Error(), "couldn't find remote ref")
}

// checkPushOptions refuses push options the server does not accept:
// go-git drops them silently then, and a person relying on one (a merge
// request opened by the push) would never learn why nothing happened.
func checkPushOptions(ctx context.Context, r Remote) error {
	ep, err := transport.NewEndpoint(r.URL)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	ep.CaBundle, ep.Proxy = r.CABundle, r.Proxy
	c, err := client.NewClient(ep)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	s, err := c.NewReceivePackSession(ep, r.Auth)
	if err != nil {
		return fmt.Errorf("asking %s for its push capabilities: %w", r.URL, err)
	}
	defer s.Close()
	ar, err := s.AdvertisedReferencesContext(ctx)
	if err != nil {
		return fmt.Errorf("asking %s for its push capabilities: %w", r.URL, err)
	}
	if !ar.Capabilities.Supports(capability.PushOptions) {
		return invalid("git.push.options are set but the server does not accept push options")
	}
	return nil
}

// push sends the local branch to the push branch and to the refspec,
// never with force: a remote that moved rejects it.
func push(ctx context.Context, repo *git.Repository, o Options, local plumbing.ReferenceName) error {
	specs := []config.RefSpec{config.RefSpec(local.String() + ":" + local.String())}
	if o.Push.Refspec != "" {
		specs = append(specs, config.RefSpec(o.Push.Refspec))
	}
	err := repo.PushContext(ctx, &git.PushOptions{
		RemoteURL:    o.Remote.URL,
		Auth:         o.Remote.Auth,
		CABundle:     o.Remote.CABundle,
		ProxyOptions: o.Remote.Proxy,
		RefSpecs:     specs,
		Options:      o.Push.Options,
	})
	if errors.Is(err, git.NoErrAlreadyUpToDate) {
		return nil
	}
	return err
}
