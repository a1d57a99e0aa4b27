package helmrender

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"

	"plumb.dev/pkg/render"
)

// ErrArchiveLimit is wrapped by every error of CheckArchive that reports a
// passed limit (as opposed to an archive that is broken or holds an entry
// no chart may hold), so a caller with reasons of its own can tell them
// apart without pkg/render's.
var ErrArchiveLimit = errors.New("chart archive limit exceeded")

// Bounds of one tar entry that are not settings: a chart's file names are
// short paths, and its PAX records carry a long name, times and owner
// names. An entry passing either is refused at once, so a header holding
// up to the tar reader's own ceiling (1 MiB per extended header) costs one
// such read, not one per entry.
const (
	MaxEntryNameBytes   = 4 << 10
	MaxEntryHeaderBytes = 16 << 10
)

// tarBlock is the size of one tar header block, charged per entry.
const tarBlock = 512

// CheckArchive reads a chart archive's tar headers (its gzip stream
// decompressed, file contents skipped, nothing kept) and refuses it before
// anything loads it: larger than limits.MaxArchiveBytes; more entries than
// limits.MaxFiles; its files' contents plus their headers (names, link
// names, PAX records, one 512-byte block each) more than
// limits.MaxDecompressedBytes decompressed; one entry's name longer than
// MaxEntryNameBytes or its header longer than MaxEntryHeaderBytes; or an
// entry that is neither a regular file nor a folder (links, devices,
// FIFOs, sparse files). The Helm SDK's loader keeps every entry's name and
// counts only contents against a process-wide limit, so this is the bound
// on what loading the chart holds. Zero limits take the defaults.
//
// Every error is a *render.Error: of reason LimitExceeded wrapping
// ErrArchiveLimit for a passed limit, BuildFailed for an archive that is
// no gzipped tar or holds a refused entry. Messages name the limit, not a
// flag; callers add their flag's name.
func CheckArchive(data []byte, limits Limits) error {
	limits = limits.withDefaults()
	if int64(len(data)) > limits.MaxArchiveBytes {
		return archiveLimit("--max-chart-size", "the chart archive is %d bytes, more than the limit of %d", len(data), limits.MaxArchiveBytes)
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return render.BuildError("the chart is not a gzipped tar archive: %v", err)
	}
	defer zr.Close()
	tr := tar.NewReader(zr)
	var total, entries int64
	for {
		hd, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return render.BuildError("reading the chart archive: %v", err)
		}
		entries++
		if entries > limits.MaxFiles {
			return archiveLimit("--max-chart-files", "the chart archive has more than %d entries", limits.MaxFiles)
		}
		if len(hd.Name) > MaxEntryNameBytes {
			return archiveLimit("", "the chart archive has an entry whose name is %d bytes, more than the limit of %d, starting %q",
				len(hd.Name), MaxEntryNameBytes, hd.Name[:64])
		}
		header := int64(tarBlock + len(hd.Name) + len(hd.Linkname))
		for k, v := range hd.PAXRecords {
			header += int64(len(k) + len(v))
		}
		if header > MaxEntryHeaderBytes {
			return archiveLimit("", "the chart archive's entry %s has a %d-byte header, more than the limit of %d", hd.Name, header, MaxEntryHeaderBytes)
		}
		// The reader turns the old TypeRegA into TypeReg or TypeDir.
		switch hd.Typeflag {
		case tar.TypeReg, tar.TypeDir, tar.TypeXGlobalHeader:
		default:
			return render.BuildError("the chart archive's entry %s is %s: a chart holds only files and folders", hd.Name, entryType(hd.Typeflag))
		}
		if hd.Size < 0 {
			return render.BuildError("the chart archive's entry %s has a negative size", hd.Name)
		}
		total += header + hd.Size
		if total > limits.MaxDecompressedBytes {
			return archiveLimit("--max-chart-extracted-size", "the chart's files pass the limit of %d bytes decompressed at %s", limits.MaxDecompressedBytes, hd.Name)
		}
	}
}

func archiveLimit(flag, format string, args ...any) error {
	return render.LimitError("%w", &archiveLimitError{msg: fmt.Sprintf(format, args...), flag: flag})
}

// archiveLimitError is a passed limit of CheckArchive: errors.Is matches
// it with ErrArchiveLimit, and its message is only its own.
// flag is render-controller's flag for the limit, which Render names;
// empty for the fixed bounds of one entry.
type archiveLimitError struct{ msg, flag string }

func (e *archiveLimitError) Error() string        { return e.msg }
func (e *archiveLimitError) Is(target error) bool { return target == ErrArchiveLimit }

func entryType(flag byte) string {
	switch flag {
	case tar.TypeSymlink:
		return "a symbolic link"
	case tar.TypeLink:
		return "a hard link"
	case tar.TypeChar, tar.TypeBlock:
		return "a device"
	case tar.TypeFifo:
		return "a FIFO"
	case tar.TypeGNUSparse:
		return "a sparse file"
	}
	return fmt.Sprintf("of tar type %q", flag)
}
