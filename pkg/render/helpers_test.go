package render

import (
	"os"
	"path/filepath"
	"testing"
)

// workspace copies testdata/<dir> into the source folder of a fresh work
// folder and returns the work folder: Build writes into its work folder.
func workspace(t testing.TB, dir string) string {
	t.Helper()
	work := t.TempDir()
	if err := os.CopyFS(SourceDir(work), os.DirFS(filepath.Join("testdata", dir))); err != nil {
		t.Fatal(err)
	}
	return work
}

// mkSource creates the source folder of work and returns it.
func mkSource(t testing.TB, work string) string {
	t.Helper()
	src := SourceDir(work)
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	return src
}
