package helmpackage

import (
	"helm.sh/helm/v4/pkg/chart/loader/archive"

	"plumb.dev/pkg/helmrender"
)

// ErrArchiveLimit is returned (errors.Is) for a chart archive past one of
// CheckArchive's bounds.
var ErrArchiveLimit = helmrender.ErrArchiveLimit

// MaxChartFiles bounds the entries of one chart archive: the SDK loader
// keeps every entry, so their count must be bounded as well as their size.
const MaxChartFiles = helmrender.DefaultMaxFiles

// CheckArchive reads the tar headers of a chart archive, without keeping
// any file, before the SDK loader loads it, with render-controller's
// check (pkg/helmrender.CheckArchive): at most MaxChartFiles entries,
// bounded names and headers, only regular files and folders, and every
// entry's header, name and PAX records charged with its size against the
// loader's decompressed budget (archive.MaxDecompressedChartSize, set from
// Limits.MaxExtractedBytes), which the loader itself charges with sizes
// only. Why: an archive of a few thousand empty files with long names is a
// megabyte compressed and a gigabyte once the SDK holds it. The archive's
// own size is bounded by its download (source-controller's
// --helm-chart-max-size).
func CheckArchive(tgz []byte) error {
	return helmrender.CheckArchive(tgz, helmrender.Limits{
		MaxArchiveBytes:      int64(len(tgz)) + 1,
		MaxDecompressedBytes: archive.MaxDecompressedChartSize,
		MaxFiles:             MaxChartFiles,
	})
}
