package helmrender

import (
	"plumb.dev/pkg/render"
)

// Limits bound what one render may read and produce. A render that passes
// one fails with a *render.Error of reason LimitExceeded naming the limit
// and the render-controller flag that sets it. Zero fields take the
// defaults. Time is bounded by Render's context (--render-timeout).
type Limits struct {
	// MaxArchiveBytes bounds the chart archive (.tgz) as given.
	// --max-chart-size.
	MaxArchiveBytes int64
	// MaxDecompressedBytes bounds the files of the archive once
	// decompressed, counted before the SDK's loader reads them. It cannot
	// pass the SDK loader's own limit (archive.MaxDecompressedChartSize,
	// 100 MiB), which Plumb leaves at Helm's default.
	// --max-chart-extracted-size.
	MaxDecompressedBytes int64
	// MaxFiles bounds the archive's entries (files and folders).
	// --max-chart-files.
	MaxFiles int64
	// MaxValuesBytes bounds the user values, measured as their canonical
	// JSON. --max-values-size.
	MaxValuesBytes int64
	// MaxOutputBytes bounds the templates' output (checked as soon as the
	// engine returns, before anything parses it) and the final manifests.
	// --max-rendered-size.
	MaxOutputBytes int64
	// MaxNodes and MaxDocuments bound the YAML nodes (aliases counted
	// expanded) and documents of the templates' output and of crds/.
	// --max-yaml-nodes, --max-yaml-documents.
	MaxNodes     int64
	MaxDocuments int64
}

// Defaults. The archive default is Plumb's artifact download limit
// (--max-artifact-size); the decompressed default is the SDK loader's own
// limit; 10,000 entries are ten times a large chart's files; values get
// 16 MiB (a ConfigMap or Secret holds at most 1 MiB, so that is many of
// them); output, nodes and documents are pkg/render's
// defaults, so a chart and a kustomization have the same ceiling.
const (
	DefaultMaxArchiveBytes      int64 = 100 << 20
	DefaultMaxDecompressedBytes int64 = 100 << 20
	DefaultMaxFiles             int64 = 10_000
	DefaultMaxValuesBytes       int64 = 16 << 20
	DefaultMaxOutputBytes             = render.DefaultMaxOutputBytes
	DefaultMaxNodes                   = render.DefaultMaxNodes
	DefaultMaxDocuments               = render.DefaultMaxDocuments
)

// withDefaults fills the zero fields.
func (l Limits) withDefaults() Limits {
	set := func(v *int64, d int64) {
		if *v <= 0 {
			*v = d
		}
	}
	set(&l.MaxArchiveBytes, DefaultMaxArchiveBytes)
	set(&l.MaxDecompressedBytes, DefaultMaxDecompressedBytes)
	set(&l.MaxFiles, DefaultMaxFiles)
	set(&l.MaxValuesBytes, DefaultMaxValuesBytes)
	set(&l.MaxOutputBytes, DefaultMaxOutputBytes)
	set(&l.MaxNodes, DefaultMaxNodes)
	set(&l.MaxDocuments, DefaultMaxDocuments)
	return l
}

// renderLimits are the limits of pkg/render's steps.
func (l Limits) renderLimits() render.Limits {
	return render.Limits{MaxOutputBytes: l.MaxOutputBytes, MaxNodes: l.MaxNodes, MaxDocuments: l.MaxDocuments}
}
