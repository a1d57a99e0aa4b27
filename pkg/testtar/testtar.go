package testtar

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"slices"
	"testing"
)

// Entry is one entry of an archive: its header, written as it is but for
// Mode (0644 when zero, except for a global header) and Size (the
// length of Body), and its content.
type Entry struct {
	Header tar.Header
	Body   string
}

// File is a regular file.
func File(name, body string) Entry {
	return Entry{Header: tar.Header{Name: name, Typeflag: tar.TypeReg}, Body: body}
}

// Dir is a folder.
func Dir(name string) Entry {
	return Entry{Header: tar.Header{Name: name, Typeflag: tar.TypeDir, Mode: 0o755}}
}

// Symlink is a symbolic link to target.
func Symlink(name, target string) Entry {
	return Entry{Header: tar.Header{Name: name, Typeflag: tar.TypeSymlink, Linkname: target, Mode: 0o777}}
}

// Files is a regular file per entry of files (name → content), in name
// order.
func Files(files map[string]string) []Entry {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	entries := make([]Entry, 0, len(names))
	for _, n := range names {
		entries = append(entries, File(n, files[n]))
	}
	return entries
}

// TarGz is the gzip-compressed tar of entries; a failure to write one
// fails the test.
func TarGz(t testing.TB, entries ...Entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		hd := e.Header
		if hd.Mode == 0 && hd.Typeflag != tar.TypeXGlobalHeader {
			hd.Mode = 0o644
		}
		hd.Size = int64(len(e.Body))
		if err := tw.WriteHeader(&hd); err != nil {
			t.Fatalf("writing the header of %q: %v", hd.Name, err)
		}
		if _, err := io.WriteString(tw, e.Body); err != nil {
			t.Fatalf("writing %q: %v", hd.Name, err)
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
