package artifact

import (
	"archive/tar"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"plumb.dev/pkg/testtar"
)

// FuzzExtract feeds arbitrary bytes to the extractor. Whatever the input,
// it must not panic, must write nothing beside the extraction root, and on
// success every link in the tree must resolve inside the root.
func FuzzExtract(f *testing.F) {
	f.Add(testtar.TarGz(f, testtar.Dir("deploy/"), testtar.File("deploy/a.yaml", "kind: ConfigMap\n"), testtar.Symlink("b", "deploy/a.yaml")))
	f.Add(testtar.TarGz(f, testtar.File("../../evil", "x")))
	f.Add(testtar.TarGz(f, testtar.File("/abs", "x")))
	f.Add(testtar.TarGz(f, testtar.Dir("d/"), testtar.Symlink("d/b", ".."), testtar.Symlink("a", "d/b/..")))
	f.Add(testtar.TarGz(f, testtar.Symlink("l", "sub"), testtar.Dir("sub/"), testtar.File("l/x", "x")))
	f.Add(testtar.TarGz(f, testtar.File("a", "1"), testtar.Entry{Header: tar.Header{Name: "h", Typeflag: tar.TypeLink, Linkname: "a"}}))
	f.Add(testtar.TarGz(f, testtar.Entry{Header: tar.Header{Name: "p", Typeflag: tar.TypeFifo}}))
	f.Add([]byte{0x1f, 0x8b, 0x08, 0x00})
	f.Add([]byte("plain text"))

	f.Fuzz(func(t *testing.T, data []byte) {
		parent := t.TempDir()
		root := filepath.Join(parent, "root")
		p := filepath.Join(parent, "a.tar.gz")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		limits := Limits{MaxArchiveBytes: 1 << 20, MaxExtractedBytes: 1 << 20, MaxFiles: 200}
		err := ExtractFile(p, xDigest(data), root, limits)

		entries, rerr := os.ReadDir(parent)
		if rerr != nil {
			t.Fatal(rerr)
		}
		for _, e := range entries {
			if e.Name() != "root" && e.Name() != "a.tar.gz" {
				t.Fatalf("extraction wrote %q outside its root (err=%v)", e.Name(), err)
			}
		}
		if err != nil {
			return
		}
		realRoot, _ := filepath.EvalSymlinks(root)
		werr := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.Type()&fs.ModeSymlink != 0 {
				rel, _ := filepath.Rel(root, path)
				if err := resolveInRoot(realRoot, filepath.ToSlash(rel)); err != nil {
					t.Fatalf("accepted a link that leaves the root: %v", err)
				}
			}
			if d.Type()&(fs.ModeDevice|fs.ModeNamedPipe|fs.ModeSocket|fs.ModeCharDevice) != 0 {
				t.Fatalf("accepted a special file %s", path)
			}
			return nil
		})
		if werr != nil {
			t.Fatal(werr)
		}
	})
}
