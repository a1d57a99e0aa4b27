package git

import (
	"errors"
	"os"
	"sync/atomic"

	"github.com/go-git/go-billy/v5"
)

// DefaultMaxSize bounds the disk one checkout may use when no limit is given
// (--max-repository-size): 1 GiB holds the largest tree render-controller
// extracts by default (500 MiB, artifact.DefaultMaxExtractedBytes) plus the
// Git objects of a shallow fetch of it, which are no larger. A bare commit
// fetches every branch's history and may need more.
const DefaultMaxSize int64 = 1 << 30

// errOverBudget fails the write that would pass the disk budget; go-git
// wraps it in its own errors, so Checkout asks the budget rather than the
// error whether the limit was passed.
var errOverBudget = errors.New("the repository size limit was passed")

// diskBudget counts the bytes a checkout writes to disk, Git objects and
// checked-out files alike, and refuses every write once max would be
// passed.
type diskBudget struct {
	max  int64
	used atomic.Int64
	over atomic.Bool
}

func (b *diskBudget) charge(n int) error {
	if b.used.Add(int64(n)) > b.max {
		b.over.Store(true)
		return errOverBudget
	}
	return nil
}

// exceeded reports whether a write was refused.
func (b *diskBudget) exceeded() bool { return b.over.Load() }

// budgetFS is the filesystem go-git writes the repository and the worktree
// through: every byte written to a file (and every symbolic link's target)
// is charged to the budget before it reaches the disk. Because it counts
// what lands on disk rather than what a transport reads, it bounds HTTP and
// SSH fetches the same way, during the fetch, and bounds the checkout of a
// small pack that inflates into a large tree as well.
type budgetFS struct {
	billy.Filesystem
	budget *diskBudget
}

func (fs budgetFS) wrap(f billy.File, err error) (billy.File, error) {
	if err != nil {
		return nil, err
	}
	return budgetFile{File: f, budget: fs.budget}, nil
}

func (fs budgetFS) Create(name string) (billy.File, error) {
	return fs.wrap(fs.Filesystem.Create(name))
}

func (fs budgetFS) OpenFile(name string, flag int, perm os.FileMode) (billy.File, error) {
	return fs.wrap(fs.Filesystem.OpenFile(name, flag, perm))
}

func (fs budgetFS) TempFile(dir, prefix string) (billy.File, error) {
	return fs.wrap(fs.Filesystem.TempFile(dir, prefix))
}

func (fs budgetFS) Chroot(path string) (billy.Filesystem, error) {
	sub, err := fs.Filesystem.Chroot(path)
	if err != nil {
		return nil, err
	}
	return budgetFS{Filesystem: sub, budget: fs.budget}, nil
}

func (fs budgetFS) Symlink(target, link string) error {
	if err := fs.budget.charge(len(target)); err != nil {
		return err
	}
	return fs.Filesystem.Symlink(target, link)
}

// Chmod keeps go-git's read-only pack files read-only.
func (fs budgetFS) Chmod(name string, mode os.FileMode) error {
	if c, ok := fs.Filesystem.(billy.Chmod); ok {
		return c.Chmod(name, mode)
	}
	return nil
}

type budgetFile struct {
	billy.File
	budget *diskBudget
}

func (f budgetFile) Write(p []byte) (int, error) {
	if err := f.budget.charge(len(p)); err != nil {
		return 0, err
	}
	return f.File.Write(p)
}
