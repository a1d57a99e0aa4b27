package artifact

import (
	"archive/tar"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"plumb.dev/pkg/testtar"
)

func xDigest(b []byte) string { return fmt.Sprintf("sha256:%x", sha256.Sum256(b)) }

// writeArchive stores data in a temp file and returns its path.
func xWriteArchive(t *testing.T, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "a.tar.gz")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestExtractFileGoodTree(t *testing.T) {
	g := NewWithT(t)
	data := testtar.TarGz(t,
		testtar.Dir("./"),
		testtar.Dir("deploy/"),
		testtar.File("deploy/kustomization.yaml", "resources: [cm.yaml]\n"),
		testtar.File("deploy/cm.yaml", "kind: ConfigMap\n"),
		testtar.Entry{Header: tar.Header{Name: "bin/run.sh", Typeflag: tar.TypeReg, Mode: 0o4777}, Body: "#!/bin/sh\n"},
		testtar.Symlink("latest", "deploy"),
		testtar.Symlink("deploy/self.yaml", "cm.yaml"),
		testtar.Symlink("deploy/dangling", "missing/file"),
	)
	out := filepath.Join(t.TempDir(), "out")
	g.Expect(ExtractFile(xWriteArchive(t, data), xDigest(data), out, Limits{})).To(Succeed())

	b, err := os.ReadFile(filepath.Join(out, "latest", "cm.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(b)).To(Equal("kind: ConfigMap\n"))
	b, err = os.ReadFile(filepath.Join(out, "deploy", "self.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(b)).To(Equal("kind: ConfigMap\n"))

	fi, err := os.Stat(filepath.Join(out, "bin", "run.sh"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(fi.Mode().Perm()).To(Equal(os.FileMode(0o755)), "setuid and world-write are dropped, exec kept")
	g.Expect(fi.Mode() & os.ModeSetuid).To(BeZero())
}

func TestExtractFileRefusals(t *testing.T) {
	big := strings.Repeat("x", 2048)
	tests := []struct {
		name    string
		entries []testtar.Entry
		limits  Limits
		wantErr error
		wantMsg string
	}{
		{name: "absolute path", entries: []testtar.Entry{testtar.File("/etc/passwd", "x")},
			wantErr: ErrUnsafePath, wantMsg: `entry "/etc/passwd" has an absolute path`},
		{name: "tar slip", entries: []testtar.Entry{testtar.File("../../evil.yaml", "x")},
			wantErr: ErrUnsafePath, wantMsg: `entry "../../evil.yaml" contains ".."`},
		{name: "dot dot inside", entries: []testtar.Entry{testtar.File("a/../../b", "x")},
			wantErr: ErrUnsafePath, wantMsg: `contains ".."`},
		{name: "symlink to absolute", entries: []testtar.Entry{testtar.Symlink("passwd", "/etc/passwd")},
			wantErr: ErrUnsafeSymlink, wantMsg: `symlink "passwd" -> "/etc/passwd" points to an absolute path`},
		{name: "symlink escaping root", entries: []testtar.Entry{testtar.Dir("a/"), testtar.Symlink("a/up", "../../outside")},
			wantErr: ErrUnsafeSymlink, wantMsg: `symlink "a/up" -> "../../outside" points outside the root`},
		{name: "symlink chain escaping root",
			entries: []testtar.Entry{testtar.Dir("d/"), testtar.Symlink("d/b", ".."), testtar.Symlink("a", "d/b/..")},
			wantErr: ErrUnsafeSymlink, wantMsg: `symlink "a" resolves outside the root`},
		{name: "write through a symlink",
			entries: []testtar.Entry{testtar.Dir("sub/"), testtar.Symlink("link", "sub"), testtar.File("link/x.yaml", "x")},
			wantErr: ErrUnsafePath, wantMsg: `link exists and is not a directory`},
		// A folder made for an earlier file is not looked at again for the
		// files below it: a link of its name must not get through then.
		{name: "a link over a folder made for an earlier file",
			entries: []testtar.Entry{testtar.File("apps/a/x.yaml", "x"), testtar.Symlink("apps/a", "b"), testtar.File("apps/a/y.yaml", "y")},
			wantErr: ErrUnsafePath, wantMsg: `symlink "apps/a"`},
		{name: "a file over a folder made for an earlier file",
			entries: []testtar.Entry{testtar.File("apps/a/x.yaml", "x"), testtar.File("apps/a", "f"), testtar.File("apps/a/y.yaml", "y")},
			wantErr: ErrUnsafePath, wantMsg: `file "apps/a"`},
		{name: "duplicate entry replaces a symlink",
			entries: []testtar.Entry{testtar.Symlink("x", "y"), testtar.File("x", "data")},
			wantErr: ErrUnsafePath, wantMsg: `entry "x" appears twice`},
		{name: "hard link", entries: []testtar.Entry{testtar.File("a", "x"), {Header: tar.Header{Name: "b", Typeflag: tar.TypeLink, Linkname: "a"}}},
			wantErr: ErrUnsupportedEntry, wantMsg: `hard link "b" -> "a"`},
		{name: "char device", entries: []testtar.Entry{{Header: tar.Header{Name: "null", Typeflag: tar.TypeChar}}},
			wantErr: ErrUnsupportedEntry, wantMsg: `device file "null"`},
		{name: "block device", entries: []testtar.Entry{{Header: tar.Header{Name: "sda", Typeflag: tar.TypeBlock}}},
			wantErr: ErrUnsupportedEntry, wantMsg: `device file "sda"`},
		{name: "fifo", entries: []testtar.Entry{{Header: tar.Header{Name: "pipe", Typeflag: tar.TypeFifo}}},
			wantErr: ErrUnsupportedEntry, wantMsg: `FIFO "pipe"`},
		{name: "too many files", entries: []testtar.Entry{testtar.File("a", "1"), testtar.File("b", "2"), testtar.File("c", "3")},
			limits: Limits{MaxFiles: 2}, wantErr: ErrTooManyFiles, wantMsg: "more than 2 entries"},
		{name: "oversize content", entries: []testtar.Entry{testtar.File("a", big), testtar.File("b", big)},
			limits: Limits{MaxExtractedBytes: 3000}, wantErr: ErrTooLarge, wantMsg: `extracting "b" would exceed the limit of 3000 extracted bytes`},
		{name: "oversize archive", entries: []testtar.Entry{testtar.File("a", big)},
			limits: Limits{MaxArchiveBytes: 10}, wantErr: ErrTooLarge, wantMsg: "larger than the limit of 10 bytes"},
	}
	for _, tt := range tests {
		for _, extract := range xExtractors {
			t.Run(extract.name+"/"+tt.name, func(t *testing.T) {
				g := NewWithT(t)
				data := testtar.TarGz(t, tt.entries...)
				out := filepath.Join(t.TempDir(), "out")
				err := extract.run(t, data, xDigest(data), out, tt.limits)
				g.Expect(err).To(MatchError(tt.wantErr))
				g.Expect(err.Error()).To(ContainSubstring(tt.wantMsg))
				g.Expect(filepath.Join(filepath.Dir(out), "outside")).NotTo(BeAnExistingFile())
			})
		}
	}
}

// xExtractors are the two entry points, which must refuse the same.
var xExtractors = []struct {
	name string
	run  func(t *testing.T, data []byte, digest, dir string, limits Limits) error
}{
	{"file", func(t *testing.T, data []byte, digest, dir string, limits Limits) error {
		return ExtractFile(xWriteArchive(t, data), digest, dir, limits)
	}},
	{"bytes", func(_ *testing.T, data []byte, digest, dir string, limits Limits) error {
		_, err := ExtractBytes(data, digest, dir, limits)
		return err
	}},
}

func TestExtractBytesCountsTheTree(t *testing.T) {
	g := NewWithT(t)
	data := testtar.TarGz(t, testtar.Dir("a/"), testtar.File("a/one.yaml", "12345"), testtar.File("two.yaml", "123"), testtar.Symlink("b", "a"))
	n, err := ExtractBytes(data, xDigest(data), filepath.Join(t.TempDir(), "out"), Limits{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(n).To(Equal(int64(4*BlockBytes)), "a block each for a/, its file, two.yaml and the link")

	// Empty folders and files cost their blocks, named or implied.
	empty := testtar.TarGz(t, testtar.File("x/y/z/empty.yaml", ""), testtar.File("big.yaml", strings.Repeat("b", BlockBytes+1)))
	n, err = ExtractBytes(empty, xDigest(empty), filepath.Join(t.TempDir(), "out"), Limits{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(n).To(Equal(int64((3+1+2)*BlockBytes)), "x, x/y, x/y/z, the empty file, two blocks of big.yaml")
}

func TestExtractFileVerifiesDigestFirst(t *testing.T) {
	g := NewWithT(t)
	data := testtar.TarGz(t, testtar.File("a.yaml", "x"))
	tampered := testtar.TarGz(t, testtar.File("a.yaml", "y"))
	out := filepath.Join(t.TempDir(), "out")

	for _, extract := range xExtractors {
		err := extract.run(t, tampered, xDigest(data), out, Limits{})
		g.Expect(err).To(MatchError(ErrDigestMismatch), extract.name)
		g.Expect(err.Error()).To(ContainSubstring("digest mismatch: the archive has " + xDigest(tampered) + ", expected " + xDigest(data)))
		g.Expect(out).NotTo(BeADirectory(), "nothing is extracted from an archive that fails verification")
	}
}

func TestParseDigest(t *testing.T) {
	good := xDigest([]byte("x"))
	tests := []struct {
		in string
		ok bool
	}{
		{good, true},
		{"sha512:" + strings.Repeat("a", 64), false},
		{strings.TrimPrefix(good, "sha256:"), false},
		{"sha256:" + strings.Repeat("A", 64), false},
		{"sha256:" + strings.Repeat("a", 63), false},
		{"sha256:" + strings.Repeat("g", 64), false},
		{"", false},
	}
	for _, tt := range tests {
		_, err := ParseDigest(tt.in)
		if (err == nil) != tt.ok {
			t.Errorf("ParseDigest(%q) error = %v, want ok=%v", tt.in, err, tt.ok)
		}
	}
}

func TestExtractFileNeedsAFreshDir(t *testing.T) {
	g := NewWithT(t)
	data := testtar.TarGz(t, testtar.File("a.yaml", "x"))
	out := t.TempDir()
	g.Expect(os.WriteFile(filepath.Join(out, "old"), nil, 0o644)).To(Succeed())
	err := ExtractFile(xWriteArchive(t, data), xDigest(data), out, Limits{})
	g.Expect(err).To(MatchError(ContainSubstring("is not empty")))
}

func TestExtractFileRefusesGarbage(t *testing.T) {
	g := NewWithT(t)
	data := []byte("this is not gzip")
	err := ExtractFile(xWriteArchive(t, data), xDigest(data), filepath.Join(t.TempDir(), "out"), Limits{})
	g.Expect(err).To(MatchError(ContainSubstring("not gzip")))
	if errors.Is(err, ErrDigestMismatch) {
		t.Fatal("a matching digest must not be reported as a mismatch")
	}
}
