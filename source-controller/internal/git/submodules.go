package git

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"plumb.dev/pkg/diskbudget"
)

// Bounds on submodules, which a repository's author chooses: how deep
// submodules may nest, and how many a checkout may bring in all.
const (
	MaxSubmoduleDepth = 5
	MaxSubmodules     = 64
	// MaxGitmodulesBytes bounds .gitmodules, which go-git reads whole.
	MaxGitmodulesBytes = 64 << 10
)

// submodule is a gitlink of a checked-out commit: where it goes, which
// commit it pins, and where .gitmodules says to fetch it from.
type submodule struct {
	path, url string
	commit    plumbing.Hash
}

// checkoutSubmodules fetches and checks out, under dir, the submodules of
// commit in repo (fetched from parentURL), recursively, as `git submodule
// update --init --recursive` does. go-git's own Submodule.Update is not
// used: it would fetch from any URL .gitmodules names (file://, or
// ssh:// without the address policy) with the same credentials. Here each
// submodule is a Checkout of its own, so it goes through reach (the
// address policy, http(s) and ssh only), shares the budget of disk and the
// context (spec.timeout) of the main checkout, and is sent the
// credentials only when it is on the same scheme, host and port as the
// main repository: a .gitmodules line cannot send them elsewhere.
func checkoutSubmodules(ctx context.Context, repo *gogit.Repository, parentURL, mainURL string, commit plumbing.Hash,
	dir string, auth *Auth, budget *diskbudget.Budget, sparse []string, depth int, count *int) error {
	subs, err := submodulesOf(repo, commit, parentURL, sparse)
	if err != nil || len(subs) == 0 {
		return err
	}
	if depth >= MaxSubmoduleDepth {
		return &Error{Kind: InvalidSpec, Err: fmt.Errorf("submodules nest deeper than %d levels", MaxSubmoduleDepth)}
	}
	for _, s := range subs {
		*count++
		if *count > MaxSubmodules {
			return &Error{Kind: InvalidSpec, Err: fmt.Errorf("the repository has more than %d submodules", MaxSubmodules)}
		}
		target := filepath.Join(dir, filepath.FromSlash(s.path))
		if err := noLinkOnTheWay(dir, s.path); err != nil {
			return err
		}
		subAuth := *auth
		if !sameOrigin(s.url, mainURL) {
			subAuth.Method = nil
		}
		sub, err := checkoutRepo(ctx, s.url, &subAuth, &Target{Commit: s.commit.String()}, target, budget, nil)
		if err != nil {
			var e *Error
			if errors.As(err, &e) {
				return &Error{Kind: e.Kind, Err: fmt.Errorf("submodule %s: %w", s.path, e.Err)}
			}
			return fmt.Errorf("submodule %s: %w", s.path, err)
		}
		if err := checkoutSubmodules(ctx, sub, s.url, mainURL, s.commit, target, auth, budget, nil, depth+1, count); err != nil {
			return err
		}
	}
	return nil
}

// submodulesOf lists the gitlinks of commit with their URLs from its
// .gitmodules, relative URLs resolved against parentURL. A gitlink that
// .gitmodules does not name is an error, as in Git. With sparse (a sparse
// checkout's patterns) only the gitlinks inside its folders count.
func submodulesOf(repo *gogit.Repository, commit plumbing.Hash, parentURL string, sparse []string) ([]submodule, error) {
	c, err := repo.CommitObject(commit)
	if err != nil {
		return nil, err
	}
	tree, err := c.Tree()
	if err != nil {
		return nil, err
	}
	var links []submodule
	walker := object.NewTreeWalker(tree, true, nil)
	defer walker.Close()
	for {
		name, entry, err := walker.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if entry.Mode == filemode.Submodule && inSparse(name, sparse) {
			links = append(links, submodule{path: name, commit: entry.Hash})
			if len(links) > MaxSubmodules {
				return nil, &Error{Kind: InvalidSpec, Err: fmt.Errorf("the repository has more than %d submodules", MaxSubmodules)}
			}
		}
	}
	if len(links) == 0 {
		return nil, nil
	}
	wt, err := repo.Worktree()
	if err != nil {
		return nil, err
	}
	if fi, err := wt.Filesystem.Lstat(".gitmodules"); err == nil && fi.Size() > MaxGitmodulesBytes {
		return nil, &Error{Kind: InvalidSpec, Err: fmt.Errorf(".gitmodules is larger than %d bytes", MaxGitmodulesBytes)}
	}
	mods, err := wt.Submodules()
	if err != nil {
		return nil, fmt.Errorf("reading .gitmodules: %w", err)
	}
	urls := map[string]string{}
	for _, m := range mods {
		urls[path.Clean(m.Config().Path)] = m.Config().URL
	}
	for i, l := range links {
		raw, ok := urls[l.path]
		if !ok {
			return nil, &Error{Kind: InvalidSpec, Err: fmt.Errorf("submodule %s has no URL in .gitmodules", l.path)}
		}
		u, err := submoduleURL(parentURL, raw)
		if err != nil {
			return nil, &Error{Kind: InvalidSpec, Err: fmt.Errorf("submodule %s: %w", l.path, err)}
		}
		links[i].url = u
	}
	return links, nil
}

// inSparse reports whether p is inside one of the folders of sparse (all
// paths are when there are none).
func inSparse(p string, sparse []string) bool {
	if len(sparse) == 0 {
		return true
	}
	for _, s := range sparse {
		if strings.HasPrefix(p, s) {
			return true
		}
	}
	return false
}

// submoduleURL resolves raw, a URL of .gitmodules, against the parent's:
// "./x" and "../x" are relative to the parent repository as in Git; an
// absolute URL must be http://, https:// or ssh:// (file://, scp-like
// host:path and other transports are refused: they would read the
// controller's disk or leave the address policy).
func submoduleURL(parentURL, raw string) (string, error) {
	if strings.HasPrefix(raw, "./") || strings.HasPrefix(raw, "../") {
		base, err := url.Parse(strings.TrimSuffix(parentURL, "/") + "/")
		if err != nil {
			return "", err
		}
		rel, err := url.Parse(raw)
		if err != nil {
			return "", fmt.Errorf("invalid URL %q in .gitmodules", raw)
		}
		return base.ResolveReference(rel).String(), nil
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("URL %q in .gitmodules is not an http://, https:// or ssh:// URL", raw)
	}
	switch u.Scheme {
	case "http", "https", "ssh":
		return raw, nil
	}
	return "", fmt.Errorf("URL %q in .gitmodules is not an http://, https:// or ssh:// URL", raw)
}

// sameOrigin reports whether a and b have the same scheme, host and port.
func sameOrigin(a, b string) bool {
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	return err1 == nil && err2 == nil && ua.Scheme == ub.Scheme && ua.Host == ub.Host
}

// noLinkOnTheWay fails unless rel is a path inside dir whose existing
// parts are folders, not symbolic links that would lead the submodule's
// checkout elsewhere.
func noLinkOnTheWay(dir, rel string) error {
	clean := path.Clean(rel)
	if path.IsAbs(clean) || clean == "." || clean == ".." || strings.HasPrefix(clean, "../") {
		return &Error{Kind: InvalidSpec, Err: fmt.Errorf("submodule path %q is not inside the repository", rel)}
	}
	at := dir
	for _, part := range strings.Split(clean, "/") {
		if part == ".git" {
			return &Error{Kind: InvalidSpec, Err: fmt.Errorf("submodule path %q is inside .git", rel)}
		}
		at = filepath.Join(at, part)
		fi, err := os.Lstat(at)
		if os.IsNotExist(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if !fi.IsDir() {
			return &Error{Kind: InvalidSpec, Err: fmt.Errorf("submodule path %q is not a folder of the checkout", rel)}
		}
	}
	return nil
}
