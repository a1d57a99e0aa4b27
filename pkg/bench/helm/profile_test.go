package main

import (
	"os"
	"testing"

	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
)

// BenchmarkRender is a warm render of the benchmark's chart, for profiling
// Plumb's side alone:
//
//	go test -run XXX -bench Render -cpuprofile cpu.out ./pkg/bench/helm
//
// The comparison with the helm CLI is the command itself (make bench-helm).
func BenchmarkRender(b *testing.B) {
	ch, err := loader.LoadDir("testdata/platform")
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	p, err := chartutil.Save(ch, dir)
	if err != nil {
		b.Fatal(err)
	}
	archive, _ := os.ReadFile(p)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := renderPlumb(archive); err != nil {
			b.Fatal(err)
		}
	}
}
