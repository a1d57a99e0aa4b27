package diskbudget

import (
	"errors"
	"os"
	"sync/atomic"

	"github.com/go-git/go-billy/v5"
)

// ErrOverBudget fails the write that would pass the budget.
var ErrOverBudget = errors.New("the repository size limit was passed")

// Budget counts the bytes written through its filesystems and refuses
// every write once max would be passed.
type Budget struct {
	max  int64
	used atomic.Int64
	over atomic.Bool
}

// New is a budget of max bytes.
func New(max int64) *Budget { return &Budget{max: max} }

// Max is the budget's limit.
func (b *Budget) Max() int64 { return b.max }

func (b *Budget) charge(n int) error {
	if b.used.Add(int64(n)) > b.max {
		b.over.Store(true)
		return ErrOverBudget
	}
	return nil
}

// Exceeded reports whether a write was refused.
func (b *Budget) Exceeded() bool { return b.over.Load() }

// FS is fs with every byte written to a file (and every symbolic link's
// target) charged to b before it reaches the disk.
func FS(fs billy.Filesystem, b *Budget) billy.Filesystem {
	return budgetFS{Filesystem: fs, budget: b}
}

type budgetFS struct {
	billy.Filesystem
	budget *Budget
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
	budget *Budget
}

func (f budgetFile) Write(p []byte) (int, error) {
	if err := f.budget.charge(len(p)); err != nil {
		return 0, err
	}
	return f.File.Write(p)
}
