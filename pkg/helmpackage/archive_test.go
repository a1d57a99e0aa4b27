package helmpackage_test

import (
	"archive/tar"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"plumb.dev/pkg/helmpackage"
	"plumb.dev/pkg/testtar"
)

// tarball is a chart archive of x/Chart.yaml and the extra entries.
func tarball(t *testing.T, extra ...testtar.Entry) []byte {
	return testtar.TarGz(t, append([]testtar.Entry{testtar.File("x/Chart.yaml", "apiVersion: v2\nname: x\nversion: 0.1.0\n")}, extra...)...)
}

// allocated returns the bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// The reviewer's archive, shortened to 200 entries to build quickly: empty
// files with 500 KB PAX names (2,000 of them are 1.1 MiB compressed, which
// the SDK loader alone turns into ~1 GiB of heap; 200 are still 100 MiB).
func TestLoadArchiveRefusesLongNamesWithinLittleMemory(t *testing.T) {
	long := strings.Repeat("a", 500_000)
	var extra []testtar.Entry
	for i := range 200 {
		extra = append(extra, testtar.Entry{Header: tar.Header{Name: fmt.Sprintf("x/files/%s%d", long, i), Typeflag: tar.TypeReg, Format: tar.FormatPAX}})
	}
	tgz := tarball(t, extra...)
	var err error
	n := allocated(func() { _, err = helmpackage.LoadArchive(tgz) })
	if !errors.Is(err, helmpackage.ErrArchiveLimit) {
		t.Fatalf("err = %v, want ErrArchiveLimit", err)
	}
	if n > 64<<20 {
		t.Fatalf("allocated %d MiB, want < 64 MiB", n>>20)
	}
}

func TestLoadArchiveRefusesTooManyEntries(t *testing.T) {
	var extra []testtar.Entry
	for i := range helmpackage.MaxChartFiles {
		extra = append(extra, testtar.File(fmt.Sprintf("x/files/%d", i), ""))
	}
	tgz := tarball(t, extra...)
	var err error
	n := allocated(func() { _, err = helmpackage.LoadArchive(tgz) })
	if !errors.Is(err, helmpackage.ErrArchiveLimit) {
		t.Fatalf("err = %v, want ErrArchiveLimit", err)
	}
	if n > 64<<20 {
		t.Fatalf("allocated %d MiB, want < 64 MiB", n>>20)
	}
}

func TestLoadArchiveRefusesLinks(t *testing.T) {
	for _, typ := range []byte{tar.TypeSymlink, tar.TypeLink, tar.TypeChar, tar.TypeFifo} {
		tgz := tarball(t, testtar.Entry{Header: tar.Header{Name: "x/templates/l.yaml", Linkname: "/etc/passwd", Typeflag: typ}})
		_, err := helmpackage.LoadArchive(tgz)
		if err == nil || !strings.Contains(err.Error(), "only files and folders") {
			t.Fatalf("type %q: err = %v, want a refusal", typ, err)
		}
	}
}

func TestLoadArchiveAcceptsFoldersAndFiles(t *testing.T) {
	tgz := tarball(t, testtar.Dir("x/templates/"), testtar.File("x/templates/a.yaml", "a:"))
	ch, err := helmpackage.LoadArchive(tgz)
	if err != nil {
		t.Fatal(err)
	}
	if len(ch.Templates) != 1 {
		t.Fatalf("templates = %d, want 1", len(ch.Templates))
	}
}
