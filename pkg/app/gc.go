package app

import (
	"os"
	"runtime/debug"
)

// DefaultGCPercent is the garbage collector's target a controller runs
// with unless GOGC is set: the heap may grow half again over what is live
// before a collection, instead of Go's default of twice it. A controller's
// live heap is small (10–15 MiB in bench-helmrelease with 100
// HelmReleases) and its CPU far below Flux's, so the collector's extra
// runs cost no CPU the bench can see, while render- and sync-controller's
// peak proportional set size fell from 54 and 69 to 48 and 60 MiB
// (docs/bench/helm-release.md, "Memory, second pass").
const DefaultGCPercent = 50

// tuneGC sets DefaultGCPercent, unless the environment sets GOGC: an
// operator's own setting wins.
func tuneGC() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(DefaultGCPercent)
	}
}
