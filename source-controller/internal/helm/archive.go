package helm

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"

	"helm.sh/helm/v4/pkg/chart/loader/archive"
)

// ErrArchiveLimit is returned for a chart archive past one of CheckArchive's
// bounds.
var ErrArchiveLimit = errors.New("chart archive exceeds a limit")

// MaxChartFiles bounds the entries of one chart archive: the SDK loader
// keeps every entry, so their count must be bounded as well as their size.
const MaxChartFiles = 10000

// maxEntryName bounds one entry's name (PATH_MAX): the SDK keeps every
// name, and a PAX header can make one a megabyte long.
const maxEntryName = 4096

// headerBytes is charged for every entry: the tar header block.
const headerBytes = 512

// CheckArchive reads the tar headers of a chart archive, without keeping
// any file, before the SDK loader loads it: at most MaxChartFiles entries,
// names at most 4096 bytes, only regular files and folders, and every
// entry's header, name and PAX records charged with its size against the
// loader's decompressed budget (archive.MaxDecompressedChartSize), which
// the loader itself charges with sizes only. Why: an archive of a few
// thousand empty files with long names is a megabyte compressed and a
// gigabyte once the SDK holds it.
func CheckArchive(tgz []byte) error {
	zr, err := gzip.NewReader(bytes.NewReader(tgz))
	if err != nil {
		return fmt.Errorf("not a gzip archive: %w", err)
	}
	defer zr.Close()
	budget := archive.MaxDecompressedChartSize
	tr := tar.NewReader(zr)
	for n := 0; ; n++ {
		hd, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading the chart archive: %w", err)
		}
		if n >= MaxChartFiles {
			return fmt.Errorf("%w: more than %d entries", ErrArchiveLimit, MaxChartFiles)
		}
		if len(hd.Name) > maxEntryName || len(hd.Linkname) > maxEntryName {
			return fmt.Errorf("%w: an entry name is longer than %d bytes", ErrArchiveLimit, maxEntryName)
		}
		switch hd.Typeflag {
		case tar.TypeReg, tar.TypeRegA, tar.TypeDir, tar.TypeXGlobalHeader:
		default:
			return fmt.Errorf("chart archive entry %q is not a regular file or folder (type %q)", hd.Name, hd.Typeflag)
		}
		cost := int64(headerBytes + len(hd.Name) + len(hd.Linkname))
		for k, v := range hd.PAXRecords {
			cost += int64(len(k) + len(v))
		}
		if hd.Size > 0 {
			cost += hd.Size
		}
		if budget -= cost; budget < 0 {
			return fmt.Errorf("%w: decompressed, names and headers included, larger than %d bytes", ErrArchiveLimit, archive.MaxDecompressedChartSize)
		}
	}
}
