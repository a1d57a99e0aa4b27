package diskbudget

import (
	"errors"
	"testing"

	"github.com/go-git/go-billy/v5/memfs"
)

func TestWritesPastTheBudgetAreRefused(t *testing.T) {
	b := New(10)
	fs := FS(memfs.New(), b)
	sub, err := fs.Chroot("dir")
	if err != nil {
		t.Fatal(err)
	}
	f, err := sub.Create("a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("123456")); err != nil {
		t.Fatalf("a write within the budget: %v", err)
	}
	if b.Exceeded() {
		t.Fatal("exceeded within the budget")
	}
	if _, err := f.Write([]byte("78901")); !errors.Is(err, ErrOverBudget) {
		t.Fatalf("a write past the budget: %v", err)
	}
	if !b.Exceeded() {
		t.Error("the budget does not report the refusal")
	}
	if err := fs.Symlink("target", "link"); !errors.Is(err, ErrOverBudget) {
		t.Errorf("a link once over budget: %v", err)
	}
}
