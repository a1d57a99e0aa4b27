package testgit

import (
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"
)

// File returns the content of path in the commit rev (a hash), read from
// the repository on disk, so a test checks what a client pushed without
// a clone of its own.
func (r *Repo) File(rev, path string) (string, error) {
	repo, err := r.open()
	if err != nil {
		return "", err
	}
	c, err := repo.CommitObject(plumbing.NewHash(rev))
	if err != nil {
		return "", fmt.Errorf("commit %s: %w", rev, err)
	}
	f, err := c.File(path)
	if err != nil {
		return "", fmt.Errorf("%s in %s: %w", path, rev, err)
	}
	return f.Contents()
}

// Parents returns the parents of the commit rev (a hash), in order.
func (r *Repo) Parents(rev string) ([]string, error) {
	repo, err := r.open()
	if err != nil {
		return nil, err
	}
	c, err := repo.CommitObject(plumbing.NewHash(rev))
	if err != nil {
		return nil, fmt.Errorf("commit %s: %w", rev, err)
	}
	out := make([]string, len(c.ParentHashes))
	for i, h := range c.ParentHashes {
		out[i] = h.String()
	}
	return out, nil
}
