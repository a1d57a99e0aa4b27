package helmpackage_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"plumb.dev/pkg/helmpackage"
)

// tarball builds a chart archive of x/Chart.yaml and the extra headers.
func tarball(t *testing.T, extra func(tw *tar.Writer)) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	tw := tar.NewWriter(zw)
	cy := []byte("apiVersion: v2\nname: x\nversion: 0.1.0\n")
	if err := tw.WriteHeader(&tar.Header{Name: "x/Chart.yaml", Mode: 0o644, Size: int64(len(cy)), Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	_, _ = tw.Write(cy)
	extra(tw)
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	_ = zw.Close()
	return buf.Bytes()
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
	tgz := tarball(t, func(tw *tar.Writer) {
		for i := range 200 {
			_ = tw.WriteHeader(&tar.Header{Name: fmt.Sprintf("x/files/%s%d", long, i), Mode: 0o644, Typeflag: tar.TypeReg, Format: tar.FormatPAX})
		}
	})
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
	tgz := tarball(t, func(tw *tar.Writer) {
		for i := range helmpackage.MaxChartFiles {
			_ = tw.WriteHeader(&tar.Header{Name: fmt.Sprintf("x/files/%d", i), Mode: 0o644, Typeflag: tar.TypeReg})
		}
	})
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
		tgz := tarball(t, func(tw *tar.Writer) {
			_ = tw.WriteHeader(&tar.Header{Name: "x/templates/l.yaml", Linkname: "/etc/passwd", Mode: 0o644, Typeflag: typ})
		})
		_, err := helmpackage.LoadArchive(tgz)
		if err == nil || !strings.Contains(err.Error(), "only files and folders") {
			t.Fatalf("type %q: err = %v, want a refusal", typ, err)
		}
	}
}

func TestLoadArchiveAcceptsFoldersAndFiles(t *testing.T) {
	tgz := tarball(t, func(tw *tar.Writer) {
		_ = tw.WriteHeader(&tar.Header{Name: "x/templates/", Mode: 0o755, Typeflag: tar.TypeDir})
		_ = tw.WriteHeader(&tar.Header{Name: "x/templates/a.yaml", Mode: 0o644, Size: 2, Typeflag: tar.TypeReg})
		_, _ = tw.Write([]byte("a:"))
	})
	ch, err := helmpackage.LoadArchive(tgz)
	if err != nil {
		t.Fatal(err)
	}
	if len(ch.Templates) != 1 {
		t.Fatalf("templates = %d, want 1", len(ch.Templates))
	}
}
