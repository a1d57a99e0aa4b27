package artifact

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/klauspost/compress/gzip"
	. "github.com/onsi/gomega"
)

// writeTree creates files (path -> content) under dir; a path ending in
// "*" is made executable.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		mode := os.FileMode(0o644)
		if name[len(name)-1] == '*' {
			name, mode = name[:len(name)-1], 0o755
		}
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
}

type packedEntry struct {
	name string
	mode int64
	body string
}

func listTar(t *testing.T, data []byte) []packedEntry {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	var out []packedEntry
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.Gname != "" || h.ModTime.Unix() != 0 {
			t.Fatalf("packedEntry %s is not normalised: %+v", h.Name, h)
		}
		b, _ := io.ReadAll(tr)
		out = append(out, packedEntry{h.Name, h.Mode, string(b)})
	}
}

func packBytes(t *testing.T, dir string, opts PackOptions) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := Pack(context.Background(), &buf, dir, opts); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func names(es []packedEntry) []string {
	var n []string
	for _, e := range es {
		n = append(n, e.name)
	}
	return n
}

func TestPackIsDeterministic(t *testing.T) {
	g := NewWithT(t)
	files := map[string]string{
		"b.yaml":        "b",
		"a/x.yaml":      "x",
		"a/deep/y.yaml": "y",
		"run.sh*":       "#!/bin/sh",
		".git/HEAD":     "ref: refs/heads/main",
		"a/.git/config": "a submodule's git folder is skipped too",
		"long/" + string(bytes.Repeat([]byte("n"), 120)) + ".yaml": "long name",
	}
	one, two := t.TempDir(), t.TempDir()
	writeTree(t, one, files)
	writeTree(t, two, files)
	// Different times, umask-like modes and creation order must not matter.
	g.Expect(os.Chtimes(filepath.Join(two, "b.yaml"), zeroTime(2001), zeroTime(2001))).To(Succeed())
	g.Expect(os.Chmod(filepath.Join(two, "a", "x.yaml"), 0o600)).To(Succeed())

	p1, p2 := packBytes(t, one, PackOptions{}), packBytes(t, two, PackOptions{})
	g.Expect(sha256.Sum256(p1)).To(Equal(sha256.Sum256(p2)))

	es := listTar(t, p1)
	got := names(es)
	g.Expect(got).NotTo(ContainElement(".git/HEAD"))
	g.Expect(got).To(ContainElements("b.yaml", "a/x.yaml", "a/deep/y.yaml", "run.sh"))
	g.Expect(got).NotTo(ContainElement("a/.git/config"))
	for _, e := range es {
		switch e.name {
		case "run.sh":
			g.Expect(e.mode).To(Equal(int64(0o755)))
		default:
			g.Expect(e.mode).To(Equal(int64(0o644)), e.name)
		}
	}
	// Packing twice gives the same bytes.
	g.Expect(packBytes(t, one, PackOptions{})).To(Equal(p1))
}

func TestPackSkipsSymlinks(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"a.yaml": "a"})
	g.Expect(os.Symlink("/etc/passwd", filepath.Join(dir, "evil"))).To(Succeed())
	g.Expect(names(listTar(t, packBytes(t, dir, PackOptions{})))).To(Equal([]string{"a.yaml"}))
}

func TestPackIgnoreRules(t *testing.T) {
	files := map[string]string{
		".sourceignore":        "secrets/\n*.log\n!keep.log\n",
		"app/deploy.yaml":      "d",
		"app/debug.log":        "l",
		"app/keep.log":         "k",
		"secrets/key.pem":      "s",
		"docs/logo.png":        "png",
		"docs/.sourceignore":   "*.md\n",
		"docs/readme.md":       "r",
		"readme.md":            "root readme stays: docs/.sourceignore is scoped",
		".gitignore":           "x",
		"nested/secrets/a.txt": "a folder pattern without a slash matches at any depth",
	}
	tests := []struct {
		name   string
		ignore *string
		want   []string
	}{
		{
			name: "defaults and .sourceignore",
			want: []string{".sourceignore", "app/deploy.yaml", "app/keep.log", "docs/.sourceignore", "readme.md"},
		},
		{
			name:   "spec.ignore replaces the defaults and wins",
			ignore: ptr("/readme.md\n!docs/readme.md\n"),
			want:   []string{".gitignore", ".sourceignore", "app/deploy.yaml", "app/keep.log", "docs/.sourceignore", "docs/logo.png", "docs/readme.md"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			dir := t.TempDir()
			writeTree(t, dir, files)
			got := names(listTar(t, packBytes(t, dir, PackOptions{Ignore: NewIgnorer(tt.ignore)})))
			g.Expect(got).To(ConsistOf(tt.want))
		})
	}
}

func TestPackHonoursContext(t *testing.T) {
	dir := t.TempDir()
	for i := 0; i < 600; i++ {
		writeTree(t, dir, map[string]string{filepath.Join("f", string(rune('a'+i%26)), itoa(i)): "x"})
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Pack(ctx, io.Discard, dir, PackOptions{}); err == nil {
		t.Fatal("Pack ignored a cancelled context")
	}
}
