package testtar_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"slices"
	"testing"

	"plumb.dev/pkg/testtar"
)

// entry is what archive/tar reads back of one entry.
type entry struct {
	name, link, body string
	typ              byte
	mode             int64
}

func read(t *testing.T, tgz []byte) []entry {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(tgz))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	var out []entry
	for {
		hd, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, entry{name: hd.Name, link: hd.Linkname, body: string(body), typ: hd.Typeflag, mode: hd.Mode})
	}
}

func TestFilesAreWrittenInNameOrder(t *testing.T) {
	got := read(t, testtar.TarGz(t, testtar.Files(map[string]string{"b/two.yaml": "2", "a.yaml": "1", "c": ""})...))
	want := []entry{
		{name: "a.yaml", body: "1", typ: tar.TypeReg, mode: 0o644},
		{name: "b/two.yaml", body: "2", typ: tar.TypeReg, mode: 0o644},
		{name: "c", typ: tar.TypeReg, mode: 0o644},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
}

func TestEntriesAreWrittenAsGiven(t *testing.T) {
	got := read(t, testtar.TarGz(t,
		testtar.Symlink("link", "../../etc/passwd"),
		testtar.Dir("d/"),
		testtar.Entry{Header: tar.Header{Name: "d/run.sh", Typeflag: tar.TypeReg, Mode: 0o4777}, Body: "#!/bin/sh\n"},
		testtar.Entry{Header: tar.Header{Name: "hard", Typeflag: tar.TypeLink, Linkname: "d/run.sh"}},
		testtar.Entry{Header: tar.Header{Name: "../out", Typeflag: tar.TypeReg}, Body: "x"},
	))
	want := []entry{
		{name: "link", link: "../../etc/passwd", typ: tar.TypeSymlink, mode: 0o777},
		{name: "d/", typ: tar.TypeDir, mode: 0o755},
		{name: "d/run.sh", body: "#!/bin/sh\n", typ: tar.TypeReg, mode: 0o4777},
		{name: "hard", link: "d/run.sh", typ: tar.TypeLink, mode: 0o644},
		{name: "../out", body: "x", typ: tar.TypeReg, mode: 0o644},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
}

func TestTheSameFilesGiveTheSameBytes(t *testing.T) {
	files := map[string]string{"a": "1", "b": "2", "c": "3", "d": "4", "e": "5"}
	first := testtar.TarGz(t, testtar.Files(files)...)
	for range 10 {
		if !bytes.Equal(testtar.TarGz(t, testtar.Files(files)...), first) {
			t.Fatal("the same files packed to other bytes")
		}
	}
}
