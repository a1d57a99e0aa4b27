// Command bench compares pkg/render with the kustomize CLI on the same
// generated kustomization (1,000 objects with an overlay by default) in the
// same run, and prints a table with the ratios. A second table compares
// pkg/render's fast path for a folder without a kustomization file with
// the same folder built through kustomize (its kustomization file made
// one the fast path does not take). `make bench-render` runs it.
//
// Time is the median wall time of -runs builds. "Cold" runs each build in
// a fresh process (this binary re-executed with -child, or the kustomize
// CLI), which is the fair comparison with a CLI; "warm" repeats builds in
// one process, as render-controller did before its render workers; a
// table of its own compares that with a build in a warm render worker. Peak memory is the peak resident
// set size of the build process (getrusage), and allocated bytes come from
// the Go runtime for the warm builds. Both outputs are checked to hold the
// same documents.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/internal/gentree"
	"plumb.dev/pkg/render"
	"plumb.dev/pkg/renderworker"
)

func main() {
	// The render-workers table renders through this program started again.
	renderworker.ServeIfWorker()
	var (
		kustomize = flag.String("kustomize", "bin/kustomize", "The kustomize CLI to compare with.")
		objects   = flag.Int("objects", 1000, "How many objects the generated base holds.")
		runs      = flag.Int("runs", 3, "Builds measured per figure (the median is shown).")
		child     = flag.String("child", "", "Internal: build the tree at this path once and exit.")
		shapeName = flag.String("shape", overlayShape.name, "Internal: the shape the child builds.")
		only      = flag.String("only", "", "Run only this table: workers, plain or cli.")
		cliShapes = flag.String("cli-shapes", "overlay,files", "The trees the cli table builds, comma-separated: overlay (a base and an overlay) and files (issue 46's 1,000 files under a spec with images and a patch).")
	)
	flag.Parse()
	if *child != "" {
		if _, err := shapeNamed(*shapeName).build(*child); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	// The plain-folder and worker tables first: they need no kustomize CLI.
	tables := []struct {
		name string
		run  func() error
	}{
		{"workers", func() error { return runWorkers(*objects, *runs) }},
		{"plain", func() error { return runPlain(*objects, *runs) }},
		{"cli", func() error {
			for _, sh := range shapes {
				if !slices.Contains(strings.Split(*cliShapes, ","), sh.name) {
					continue
				}
				if err := run(*kustomize, sh, *objects, *runs); err != nil {
					return err
				}
			}
			return nil
		}},
	}
	for _, t := range tables {
		if *only != "" && *only != t.name {
			continue
		}
		if err := t.run(); err != nil {
			fmt.Fprintln(os.Stderr, "bench-render:", err)
			os.Exit(1)
		}
	}
}

// shape is a generated tree and the spec that builds it, and how the
// kustomize CLI builds the same objects.
type shape struct {
	name, describe string
	write          func(src string, objects int) error
	spec           kustomizev1.KustomizationSpec
	// cliPath is the folder, relative to the source, the CLI builds;
	// writeCLI writes in the source what Build keeps in memory for it
	// (nil: nothing, the tree has its kustomizations).
	cliPath  string
	writeCLI func(src string) error
}

var overlayShape = shape{
	name:     "overlay",
	describe: "base + overlay with namespace, prefix, labels, image, SMP and JSON 6902 patches",
	write:    gentree.Write,
	spec:     kustomizev1.KustomizationSpec{Path: gentree.OverlayPath},
	cliPath:  gentree.OverlayPath,
}

// filesShape is issue 46's tree with Deployments: one object per file, no
// kustomization file, a spec with a targetNamespace, an image and a patch,
// which kustomize built until pkg/render's fast path took referrers.
var filesShape = shape{
	name:     "files",
	describe: "one object per file, no kustomization file; spec: targetNamespace, images, a JSON 6902 patch",
	write:    gentree.WriteFiles,
	spec:     gentree.FilesSpec(),
	cliPath:  "cli-overlay",
	writeCLI: writeFilesOverlay,
}

var shapes = []shape{overlayShape, filesShape}

func shapeNamed(name string) shape {
	for _, sh := range shapes {
		if sh.name == name {
			return sh
		}
	}
	return overlayShape
}

// build renders the tree in work (its source in render.SourceDir(work)).
func (sh shape) build(work string) (*render.Result, error) {
	return render.Build(context.Background(), work, &sh.spec, render.Options{})
}

// writeFilesOverlay writes for the kustomize CLI what Build generates in
// memory for filesShape: a kustomization listing the files, and an
// overlay with the spec's fields.
func writeFilesOverlay(src string) error {
	folder := filepath.Join(src, gentree.FilesPath)
	names, err := filepath.Glob(filepath.Join(folder, "*.yaml"))
	if err != nil {
		return err
	}
	sort.Strings(names)
	k := "resources:\n"
	for _, n := range names {
		k += "- " + filepath.Base(n) + "\n"
	}
	if err := os.WriteFile(filepath.Join(folder, "kustomization.yaml"), []byte(k), 0o644); err != nil {
		return err
	}
	overlay := filepath.Join(src, "cli-overlay")
	if err := os.MkdirAll(overlay, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte(`namespace: bench
resources:
- ../`+gentree.FilesPath+`
images:
- name: registry.example/app
  newTag: v2.0.0
patches:
- patch: |
    - op: add
      path: /metadata/annotations/team
      value: platform
  target:
    kind: Service
`), 0o644)
}

type sample struct {
	wall   time.Duration
	maxRSS int64 // bytes
}

func run(kustomize string, sh shape, objects, runs int) error {
	if _, err := os.Stat(kustomize); err != nil {
		return fmt.Errorf("the kustomize CLI is missing (%v): run `make bench-render`, which builds it", err)
	}
	dir, err := os.MkdirTemp("", "plumb-bench-render-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	src := render.SourceDir(dir)
	if err := sh.write(src, objects); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}

	// Outputs first: both must render the same documents. The CLI builds
	// a copy of the tree with what Build keeps in memory written out.
	res, err := sh.build(dir)
	if err != nil {
		return err
	}
	cliSrc := src
	if sh.writeCLI != nil {
		cliSrc = filepath.Join(dir, "cli")
		if err := os.CopyFS(cliSrc, os.DirFS(src)); err != nil {
			return err
		}
		if err := sh.writeCLI(cliSrc); err != nil {
			return err
		}
	}
	cliOut, err := exec.Command(kustomize, "build", filepath.Join(cliSrc, sh.cliPath)).Output()
	if err != nil {
		return fmt.Errorf("kustomize build: %w%s", err, stderrOf(err))
	}
	same := sameDocuments(res.Manifests, cliOut)

	var cold, cli []sample
	for i := 0; i < runs; i++ {
		s, err := timeProcess(self, "-child", dir, "-shape", sh.name)
		if err != nil {
			return fmt.Errorf("pkg/render child: %w", err)
		}
		cold = append(cold, s)
		s, err = timeProcess(kustomize, "build", "-o", os.DevNull, filepath.Join(cliSrc, sh.cliPath))
		if err != nil {
			return fmt.Errorf("kustomize build: %w", err)
		}
		cli = append(cli, s)
	}

	// Warm, in process: what render-controller pays per render.
	var warm []time.Duration
	var ms0, ms1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms0)
	for i := 0; i < runs; i++ {
		start := time.Now()
		if _, err := sh.build(dir); err != nil {
			return err
		}
		warm = append(warm, time.Since(start))
	}
	runtime.ReadMemStats(&ms1)
	allocPerBuild := float64(ms1.TotalAlloc-ms0.TotalAlloc) / float64(runs)

	coldWall, cliWall := medianWall(cold), medianWall(cli)
	coldRSS, cliRSS := medianRSS(cold), medianRSS(cli)
	fmt.Printf("render benchmark: %d objects (%s), %d runs each, median, %s/%s\n\n",
		len(res.Objects), sh.describe, runs, runtime.GOOS, runtime.GOARCH)
	fmt.Printf("%-40s %14s %14s %8s\n", "figure", "pkg/render", "kustomize CLI", "ratio")
	fmt.Printf("%-40s %14s %14s %8s\n", strings.Repeat("-", 40), strings.Repeat("-", 14), strings.Repeat("-", 14), strings.Repeat("-", 8))
	fmt.Printf("%-40s %14s %14s %8.2f\n", "time per build, fresh process", ms(coldWall), ms(cliWall), float64(coldWall)/float64(cliWall))
	fmt.Printf("%-40s %14s %14s %8s\n", "time per build, warm in process", ms(median(warm)), "-", "-")
	fmt.Printf("%-40s %14s %14s %8.2f\n", "peak RSS of the build process", mib(float64(coldRSS)), mib(float64(cliRSS)), float64(coldRSS)/float64(cliRSS))
	fmt.Printf("%-40s %14s %14s %8s\n", "allocated per warm build (Go heap)", mib(allocPerBuild), "-", "-")
	fmt.Printf("%-40s %14d %14d %8s\n", "output bytes", len(res.Manifests), len(cliOut), "-")
	fmt.Printf("\nratio = pkg/render / kustomize CLI (below 1 is better). Same documents in both outputs: %v\n\n", same)
	if !same {
		return errors.New("pkg/render and the kustomize CLI rendered different documents")
	}
	return nil
}

// runPlain compares, warm in process, the two ways pkg/render builds a
// folder of ConfigMaps: without a kustomization file (the fast path, which
// does not run kustomize) and with one listing the same files beside an
// empty buildMetadata list (kustomize runs: the fast path takes a
// kustomization with resources and nothing else, and the empty list,
// which kustomize ignores, is something else). Both must render the same
// bytes.
func runPlain(objects, runs int) error {
	fmt.Printf("plain folder: %d ConfigMaps, warm in process, %d runs each, median\n\n", objects, runs)
	fmt.Printf("%-40s %14s %14s %8s\n", "layout", "fast path", "kustomize", "ratio")
	fmt.Printf("%-40s %14s %14s %8s\n", strings.Repeat("-", 40), strings.Repeat("-", 14), strings.Repeat("-", 14), strings.Repeat("-", 8))
	for _, layout := range []struct {
		name    string
		perFile int
	}{{"one file of all", objects}, {"one file each", 1}} {
		var times [2]time.Duration
		var outs [2][]byte
		for i, withKustomization := range []bool{false, true} {
			dir, err := os.MkdirTemp("", "plumb-bench-render-plain-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(dir)
			if err := gentree.WritePlain(render.SourceDir(dir), objects, layout.perFile, withKustomization); err != nil {
				return err
			}
			if withKustomization {
				if err := appendFile(filepath.Join(render.SourceDir(dir), gentree.PlainPath, "kustomization.yaml"), "buildMetadata: []\n"); err != nil {
					return err
				}
			}
			spec := &kustomizev1.KustomizationSpec{Path: gentree.PlainPath}
			var ds []time.Duration
			for r := 0; r < runs; r++ {
				start := time.Now()
				res, err := render.Build(context.Background(), dir, spec, render.Options{})
				if err != nil {
					return err
				}
				ds = append(ds, time.Since(start))
				outs[i] = res.Manifests
			}
			times[i] = median(ds)
		}
		if !bytes.Equal(outs[0], outs[1]) {
			return fmt.Errorf("%s: the fast path and kustomize rendered different bytes", layout.name)
		}
		fmt.Printf("%-40s %14s %14s %8.2f\n", layout.name, ms(times[0]), ms(times[1]), float64(times[0])/float64(times[1]))
	}
	fmt.Print("\nratio = fast path / kustomize (below 1 is better); both rendered the same bytes.\n\n")
	return nil
}

// appendFile appends text to the file at path.
func appendFile(path, text string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(text); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// timeProcess runs a command to completion and returns its wall time and
// peak resident set size.
func timeProcess(name string, args ...string) (sample, error) {
	cmd := exec.Command(name, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return sample{}, fmt.Errorf("%w: %s", err, stderr.String())
	}
	s := sample{wall: time.Since(start)}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		s.maxRSS = ru.Maxrss * 1024 // kilobytes on Linux
	}
	return s, nil
}

// sameDocuments compares two multi-document streams as sets of documents:
// the order differs (pkg/render sorts canonically).
func sameDocuments(a, b []byte) bool {
	split := func(x []byte) []string {
		docs := strings.Split(strings.TrimSpace(string(x)), "\n---\n")
		for i := range docs {
			docs[i] = strings.TrimSpace(docs[i])
		}
		sort.Strings(docs)
		return docs
	}
	da, db := split(a), split(b)
	if len(da) != len(db) {
		return false
	}
	for i := range da {
		if da[i] != db[i] {
			return false
		}
	}
	return true
}

func stderrOf(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) && len(ee.Stderr) > 0 {
		return ": " + strings.TrimSpace(string(ee.Stderr))
	}
	return ""
}

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

func medianWall(ss []sample) time.Duration {
	ds := make([]time.Duration, len(ss))
	for i, s := range ss {
		ds[i] = s.wall
	}
	return median(ds)
}

func medianRSS(ss []sample) int64 {
	v := make([]int64, len(ss))
	for i, s := range ss {
		v[i] = s.maxRSS
	}
	sort.Slice(v, func(i, j int) bool { return v[i] < v[j] })
	return v[len(v)/2]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }

func mib(b float64) string { return fmt.Sprintf("%.1f MiB", b/(1<<20)) }
