package artifact

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// xEntry is one tar entry of a test archive.
type xEntry struct {
	name     string
	typ      byte
	body     string
	linkname string
	mode     int64
}

func xFile(name, body string) xEntry { return xEntry{name: name, typ: tar.TypeReg, body: body} }
func xDir(name string) xEntry        { return xEntry{name: name, typ: tar.TypeDir} }
func xSymlink(name, target string) xEntry {
	return xEntry{name: name, typ: tar.TypeSymlink, linkname: target}
}

// tarGz packs entries into a gzip-compressed tar in memory.
func xTarGz(t testing.TB, entries ...xEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		mode := e.mode
		if mode == 0 {
			mode = 0o644
		}
		hdr := &tar.Header{Name: e.name, Typeflag: e.typ, Linkname: e.linkname, Mode: mode}
		if e.typ == tar.TypeReg {
			hdr.Size = int64(len(e.body))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatalf("writing header %q: %v", e.name, err)
		}
		if e.body != "" {
			if _, err := tw.Write([]byte(e.body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

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
	data := xTarGz(t,
		xDir("./"),
		xDir("deploy/"),
		xFile("deploy/kustomization.yaml", "resources: [cm.yaml]\n"),
		xFile("deploy/cm.yaml", "kind: ConfigMap\n"),
		xEntry{name: "bin/run.sh", typ: tar.TypeReg, body: "#!/bin/sh\n", mode: 0o4777},
		xSymlink("latest", "deploy"),
		xSymlink("deploy/self.yaml", "cm.yaml"),
		xSymlink("deploy/dangling", "missing/file"),
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
		entries []xEntry
		limits  Limits
		wantErr error
		wantMsg string
	}{
		{name: "absolute path", entries: []xEntry{xFile("/etc/passwd", "x")},
			wantErr: ErrUnsafePath, wantMsg: `entry "/etc/passwd" has an absolute path`},
		{name: "tar slip", entries: []xEntry{xFile("../../evil.yaml", "x")},
			wantErr: ErrUnsafePath, wantMsg: `entry "../../evil.yaml" contains ".."`},
		{name: "dot dot inside", entries: []xEntry{xFile("a/../../b", "x")},
			wantErr: ErrUnsafePath, wantMsg: `contains ".."`},
		{name: "symlink to absolute", entries: []xEntry{xSymlink("passwd", "/etc/passwd")},
			wantErr: ErrUnsafeSymlink, wantMsg: `symlink "passwd" -> "/etc/passwd" points to an absolute path`},
		{name: "symlink escaping root", entries: []xEntry{xDir("a/"), xSymlink("a/up", "../../outside")},
			wantErr: ErrUnsafeSymlink, wantMsg: `symlink "a/up" -> "../../outside" points outside the root`},
		{name: "symlink chain escaping root",
			entries: []xEntry{xDir("d/"), xSymlink("d/b", ".."), xSymlink("a", "d/b/..")},
			wantErr: ErrUnsafeSymlink, wantMsg: `symlink "a" resolves outside the root`},
		{name: "write through a symlink",
			entries: []xEntry{xDir("sub/"), xSymlink("link", "sub"), xFile("link/x.yaml", "x")},
			wantErr: ErrUnsafePath, wantMsg: `link exists and is not a directory`},
		{name: "duplicate entry replaces a symlink",
			entries: []xEntry{xSymlink("x", "y"), xFile("x", "data")},
			wantErr: ErrUnsafePath, wantMsg: `entry "x" appears twice`},
		{name: "hard link", entries: []xEntry{xFile("a", "x"), {name: "b", typ: tar.TypeLink, linkname: "a"}},
			wantErr: ErrUnsupportedEntry, wantMsg: `hard link "b" -> "a"`},
		{name: "char device", entries: []xEntry{{name: "null", typ: tar.TypeChar}},
			wantErr: ErrUnsupportedEntry, wantMsg: `device file "null"`},
		{name: "block device", entries: []xEntry{{name: "sda", typ: tar.TypeBlock}},
			wantErr: ErrUnsupportedEntry, wantMsg: `device file "sda"`},
		{name: "fifo", entries: []xEntry{{name: "pipe", typ: tar.TypeFifo}},
			wantErr: ErrUnsupportedEntry, wantMsg: `FIFO "pipe"`},
		{name: "too many files", entries: []xEntry{xFile("a", "1"), xFile("b", "2"), xFile("c", "3")},
			limits: Limits{MaxFiles: 2}, wantErr: ErrTooManyFiles, wantMsg: "more than 2 entries"},
		{name: "oversize content", entries: []xEntry{xFile("a", big), xFile("b", big)},
			limits: Limits{MaxExtractedBytes: 3000}, wantErr: ErrTooLarge, wantMsg: `extracting "b" would exceed the limit of 3000 extracted bytes`},
		{name: "oversize archive", entries: []xEntry{xFile("a", big)},
			limits: Limits{MaxArchiveBytes: 10}, wantErr: ErrTooLarge, wantMsg: "larger than the limit of 10 bytes"},
	}
	for _, tt := range tests {
		for _, extract := range xExtractors {
			t.Run(extract.name+"/"+tt.name, func(t *testing.T) {
				g := NewWithT(t)
				data := xTarGz(t, tt.entries...)
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
	data := xTarGz(t, xDir("a/"), xFile("a/one.yaml", "12345"), xFile("two.yaml", "123"), xSymlink("b", "a"))
	n, err := ExtractBytes(data, xDigest(data), filepath.Join(t.TempDir(), "out"), Limits{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(n).To(Equal(int64(4*BlockBytes)), "a block each for a/, its file, two.yaml and the link")

	// Empty folders and files cost their blocks, named or implied.
	empty := xTarGz(t, xFile("x/y/z/empty.yaml", ""), xFile("big.yaml", strings.Repeat("b", BlockBytes+1)))
	n, err = ExtractBytes(empty, xDigest(empty), filepath.Join(t.TempDir(), "out"), Limits{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(n).To(Equal(int64((3+1+2)*BlockBytes)), "x, x/y, x/y/z, the empty file, two blocks of big.yaml")
}

func TestExtractFileVerifiesDigestFirst(t *testing.T) {
	g := NewWithT(t)
	data := xTarGz(t, xFile("a.yaml", "x"))
	tampered := xTarGz(t, xFile("a.yaml", "y"))
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
	data := xTarGz(t, xFile("a.yaml", "x"))
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
