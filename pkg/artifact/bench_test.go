package artifact

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"plumb.dev/pkg/testtar"
)

// BenchmarkStoreARender stores a render of four objects for a new
// Kustomization each time, as render-controller does in a fleet sync
// (docs/bench/fleet.md, "Fleet runs P1–P3").
func BenchmarkStoreARender(b *testing.B) {
	s, err := NewStorage(b.TempDir(), "render-controller.plumb-system", 2)
	if err != nil {
		b.Fatal(err)
	}
	s.Rebuilt = true
	render := bytes.Repeat([]byte("apiVersion: v1\nkind: ConfigMap\n"), 40)
	b.ReportAllocs()
	defer reportCPU(b)()
	for i := 0; b.Loop(); i++ {
		ref := Ref{Kind: "Kustomization", Namespace: fmt.Sprintf("app-%06d", i), Name: "app"}
		if _, err := s.Store(context.Background(), ref, "render.tar.gz", bytes.NewReader(render)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkExtractAFleetRepository extracts a repository of the fleet
// benchmark's paths layout: 200 folders of a kustomization.yaml and an
// app.yaml.
func BenchmarkExtractAFleetRepository(b *testing.B) {
	var entries []testtar.Entry
	for i := range 200 {
		dir := fmt.Sprintf("apps/app-%04d/", i)
		entries = append(entries, testtar.File(dir+"kustomization.yaml", "resources: [app.yaml]\n"),
			testtar.File(dir+"app.yaml", "apiVersion: v1\nkind: ConfigMap\n"))
	}
	data := testtar.TarGz(b, entries...)
	digest := xDigest(data)
	parent := b.TempDir()
	b.ReportAllocs()
	defer reportCPU(b)()
	for i := 0; b.Loop(); i++ {
		dir := filepath.Join(parent, fmt.Sprint(i))
		if _, err := ExtractBytes(data, digest, dir, Limits{}); err != nil {
			b.Fatal(err)
		}
	}
}

// reportCPU reports the process's CPU time (user and system) per
// operation beside the wall time. On a machine shared with other work
// both follow its load, the kernel's part too (extractions measured 30 to
// 150 ms of CPU each for the same code): a small difference is better
// counted in system calls (strace -f -c over a fixed -test.benchtime).
func reportCPU(b *testing.B) func() {
	start := cpuTime()
	return func() { b.ReportMetric(float64((cpuTime()-start).Microseconds())/float64(b.N), "cpu-µs/op") }
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
