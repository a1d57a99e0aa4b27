package helmrender

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/render"
	"plumb.dev/pkg/testtar"
)

var chartYAML = testtar.File("x/Chart.yaml", "apiVersion: v2\nname: x\nversion: 0.1.0\n")

// longNames is the review's archive: 2,000 empty files with 500 KB names
// (PAX), about 1 MiB compressed; the SDK's loader holds every name, close
// to 1 GiB. It is written as gzip members (a gzip stream may be several,
// read as one) so that the run of 500,000 "a"s is deflated once, not
// 2,000 times.
func longNames(t testing.TB) []byte {
	const nameLen = 500_000
	run := strings.Repeat("a", nameLen)
	var out bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&out, gzip.BestCompression)
	member := func(data []byte) {
		zw.Reset(&out)
		if _, err := zw.Write(data); err != nil {
			t.Fatal(err)
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
	}
	var runMember []byte
	raw := func(e testtar.Entry, end bool) []byte {
		var b bytes.Buffer
		tw := tar.NewWriter(&b)
		if err := tw.WriteHeader(&e.Header); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(e.Body)); err != nil {
			t.Fatal(err)
		}
		if end {
			err := tw.Close()
			if err != nil {
				t.Fatal(err)
			}
		} else if err := tw.Flush(); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	chart := chartYAML
	chart.Header.Mode, chart.Header.Size = 0o644, int64(len(chart.Body))
	member(raw(chart, false))
	for i := 0; i < 2000; i++ {
		data := raw(testtar.Entry{Header: tar.Header{Name: fmt.Sprintf("x/files/%s%d", run, i), Mode: 0o644, Typeflag: tar.TypeReg, Format: tar.FormatPAX}}, false)
		at := bytes.Index(data, []byte(run))
		if at < 0 {
			t.Fatal("no run of names in the PAX header")
		}
		member(data[:at])
		if runMember == nil {
			start := out.Len()
			member([]byte(run))
			runMember = append([]byte(nil), out.Bytes()[start:]...)
		} else {
			out.Write(runMember)
		}
		member(data[at+nameLen:])
	}
	member(make([]byte, 1024)) // the end of the archive
	return out.Bytes()
}

// manyFiles is a chart with n more empty files of short names.
func manyFiles(t testing.TB, n int) []byte {
	entries := []testtar.Entry{chartYAML}
	for i := 0; i < n; i++ {
		entries = append(entries, testtar.File(fmt.Sprintf("x/files/%d", i), ""))
	}
	return testtar.TarGz(t, entries...)
}

// The review's archive is refused from its first long name, by
// CheckArchive and by Render, with little allocated.
func TestArchiveLongNames(t *testing.T) {
	archive := longNames(t)
	if len(archive) > 2<<20 {
		t.Fatalf("the archive is %d bytes compressed", len(archive))
	}
	for name, check := range map[string]func() error{
		"CheckArchive": func() error { return CheckArchive(archive, Limits{}) },
		"Render": func() error {
			_, err := Render(context.Background(), archive, baseOptions())
			return err
		},
	} {
		allocated := allocatedBy(func() {
			err := check()
			wantLimit(t, err, "name is 500009 bytes")
			if !errors.Is(err, ErrArchiveLimit) {
				t.Errorf("%s: %v is not ErrArchiveLimit", name, err)
			}
		})
		if allocated > 64<<20 {
			t.Errorf("%s: refusing the archive allocated %d MiB", name, allocated>>20)
		}
	}
}

func TestCheckArchive(t *testing.T) {
	ok := func(t *testing.T, archive []byte, limits Limits) {
		t.Helper()
		if err := CheckArchive(archive, limits); err != nil {
			t.Fatal(err)
		}
	}
	limit := func(t *testing.T, archive []byte, limits Limits, want string) {
		t.Helper()
		err := CheckArchive(archive, limits)
		wantLimit(t, err, want)
		if !errors.Is(err, ErrArchiveLimit) {
			t.Errorf("%v is not ErrArchiveLimit", err)
		}
	}
	refused := func(t *testing.T, archive []byte, want string) {
		t.Helper()
		err := CheckArchive(archive, Limits{})
		if render.Reason(err) != kustomizev1.BuildFailedReason || errors.Is(err, ErrArchiveLimit) || !strings.Contains(err.Error(), want) {
			t.Fatalf("want BuildFailed saying %q, got %s: %v", want, render.Reason(err), err)
		}
	}
	t.Run("a packaged chart passes", func(t *testing.T) {
		ok(t, packageChart(t, "app", nil), Limits{})
	})
	t.Run("folders and a global header pass", func(t *testing.T) {
		ok(t, testtar.TarGz(t,
			testtar.Entry{Header: tar.Header{Typeflag: tar.TypeXGlobalHeader, PAXRecords: map[string]string{"comment": "0123abcd"}}},
			testtar.Dir("x/"),
			chartYAML), Limits{})
	})
	t.Run("entries", func(t *testing.T) {
		archive := manyFiles(t, 99)
		ok(t, archive, Limits{MaxFiles: 100})
		limit(t, archive, Limits{MaxFiles: 99}, "more than 99 entries")
		// The default.
		limit(t, manyFiles(t, int(DefaultMaxFiles)), Limits{}, "more than 10000 entries")
	})
	t.Run("names count against the decompressed size", func(t *testing.T) {
		// 100 empty files with 4 KiB names: nothing to decompress but
		// their headers.
		entries := []testtar.Entry{chartYAML}
		for i := 0; i < 100; i++ {
			entries = append(entries, testtar.Entry{Header: tar.Header{Name: fmt.Sprintf("x/%04d%s", i, strings.Repeat("n", 4000)), Typeflag: tar.TypeReg, Format: tar.FormatPAX}})
		}
		archive := testtar.TarGz(t, entries...)
		ok(t, archive, Limits{MaxDecompressedBytes: 1 << 20})
		limit(t, archive, Limits{MaxDecompressedBytes: 200 << 10}, "limit of 204800 bytes decompressed")
	})
	t.Run("PAX records count", func(t *testing.T) {
		limit(t, testtar.TarGz(t, chartYAML, testtar.Entry{Header: tar.Header{Name: "x/a", Typeflag: tar.TypeReg,
			PAXRecords: map[string]string{"PLUMB.junk": strings.Repeat("j", 20_000)}}}), Limits{}, "x/a has a 20")
	})
	t.Run("archive size", func(t *testing.T) {
		archive := manyFiles(t, 0)
		limit(t, archive, Limits{MaxArchiveBytes: int64(len(archive)) - 1}, "the chart archive is")
	})
	t.Run("links and devices refused", func(t *testing.T) {
		refused(t, testtar.TarGz(t, chartYAML, testtar.Symlink("x/values.yaml", "/etc/passwd")), "x/values.yaml is a symbolic link")
		refused(t, testtar.TarGz(t, chartYAML, testtar.Entry{Header: tar.Header{Name: "x/values.yaml", Linkname: "x/Chart.yaml", Typeflag: tar.TypeLink}}), "is a hard link")
		refused(t, testtar.TarGz(t, chartYAML, testtar.Entry{Header: tar.Header{Name: "x/dev", Typeflag: tar.TypeChar}}), "is a device")
		refused(t, testtar.TarGz(t, chartYAML, testtar.Entry{Header: tar.Header{Name: "x/fifo", Typeflag: tar.TypeFifo}}), "is a FIFO")
	})
	t.Run("not a gzipped tar", func(t *testing.T) {
		refused(t, []byte("plain text"), "not a gzipped tar")
	})
}

// Render names render-controller's flag for a limit it can set.
func TestArchiveLimitFlags(t *testing.T) {
	opts := baseOptions()
	opts.Limits.MaxFiles = 10
	_, err := Render(context.Background(), manyFiles(t, 10), opts)
	wantLimit(t, err, "more than 10 entries", "--max-chart-files")
}
