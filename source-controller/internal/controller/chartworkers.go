package controller

import (
	"github.com/go-logr/logr"

	"plumb.dev/pkg/helmpackage"
	"plumb.dev/pkg/renderworker"
)

// Defaults of --chart-workers and --chart-worker-memory.
const (
	// DefaultChartWorkers is --chart-workers: 2, as many as deploy/'s
	// --concurrent=2, so that one chart stopped only at its time limit
	// (a minute by default) does not hold up every other HelmChart, while
	// the workers' memory stays a fraction of the container's. Packaging
	// takes milliseconds for an ordinary chart; more workers buy little.
	DefaultChartWorkers = 2
	// DefaultChartWorkerMemory is --chart-worker-memory: what a build at
	// the default budgets takes, measured. A chart whose files fill the
	// 100 MiB of --helm-chart-max-extracted-size packages within 320 MiB
	// (not 256); with dependencies whose files fill the same budget again
	// (five archives of 10 MiB, a package of 100 MB) within 768 MiB (not
	// 640): the files held twice over while the SDK reads them, the
	// archives, the package and its copy on the way back. An ordinary
	// chart of some hundred KiB takes a few MiB. Parsing values is the
	// rest: YAML can cost some 130 times its size (testhelm.HostileValues),
	// so a crafted values file fails at this limit rather than taking
	// source-controller down.
	DefaultChartWorkerMemory int64 = 768 << 20
)

// chartWorkerNames are the words of a chart worker's failures: the
// messages name source-controller's flags.
var chartWorkerNames = renderworker.Names{
	Work:    "packaging the chart",
	Worker:  "chart worker",
	Timeout: "spec.timeout",
	Workers: "--chart-workers",
	Memory:  "--chart-worker-memory",
	Program: "source-controller",
}

// MaxPackageBytes is the largest package a chart worker may write
// (RLIMIT_FSIZE) and send back: the chart's files and the dependencies
// it adds, each within maxExtracted, compress to no more than they hold
// but for the archive's tar headers (512 bytes per file, a few dozen
// once compressed), which the 16 MiB on top covers.
func MaxPackageBytes(maxExtracted int64) int64 {
	if maxExtracted <= 0 {
		maxExtracted = helmpackage.DefaultMaxExtractedSize
	}
	return 2*maxExtracted + 16<<20
}

// NewChartWorkers returns the pool of chart workers that load and package
// HelmCharts (HelmChartReconciler.Packager): workers processes, each
// limited to memory bytes and to writing one package of at most
// MaxPackageBytes(maxExtracted).
func NewChartWorkers(workers int, memory, maxExtracted int64, log logr.Logger) *renderworker.Pool {
	return renderworker.NewPool(renderworker.Options{
		Workers:      workers,
		Memory:       memory,
		MaxFileBytes: MaxPackageBytes(maxExtracted),
		Names:        chartWorkerNames,
		Log:          log,
	})
}
