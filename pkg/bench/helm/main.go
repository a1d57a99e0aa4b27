// Command bench compares pkg/helmrender with the helm CLI (`helm template`,
// built from the same SDK version in hack/tools/helm) on a real-world-sized
// chart, in the same run, and prints a table with the ratios. `make
// bench-helm` runs it.
//
// The chart (testdata/platform, written for this benchmark: sixty
// components over a dozen templates with helpers, ranges, conditionals,
// toYaml/fromYaml merges, tpl, checksums, hooks, a subchart and three
// crds/ CRDs) is packaged by the SDK first, and both sides render the same
// archive with the same release, namespace, Kubernetes version and extra
// API versions, CRDs included (policy CreateReplace, so the only
// annotation Plumb adds, plumb.dev/prune on the crds/ CRDs, is the one the
// comparison leaves out).
//
// Time is the median wall time of -runs renders, and the fastest of them
// (on shared cores other work only ever adds time, so the fastest is the
// figure least disturbed by it). "Cold" runs each render
// in a fresh process (this binary re-executed with -child, or the helm
// CLI), which is the fair comparison with a CLI; "warm" repeats renders in
// one process, as render-controller does. CPU time is user plus system of
// the process, peak memory its peak resident set size (getrusage), and
// allocated bytes come from the Go runtime for the warm renders. Both
// outputs are parsed and compared object for object.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"time"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"sigs.k8s.io/kustomize/kyaml/kio"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/helmrender"
	"plumb.dev/pkg/render"
	"plumb.dev/pkg/renderworker"
)

// The release both sides render.
const (
	releaseName = "shop"
	namespace   = "prod"
	kubeVersion = "v1.37.2"
)

// extraAPIs are served on top of the built-in API versions, so the
// chart's ServiceMonitors render.
var extraAPIs = []string{"monitoring.coreos.com/v1", "monitoring.coreos.com/v1/ServiceMonitor"}

func main() {
	// The worker row renders through this program started again.
	renderworker.ServeIfWorker()
	var (
		helm  = flag.String("helm", "bin/helm", "The helm CLI to compare with.")
		chart = flag.String("chart", "pkg/bench/helm/testdata/platform", "The chart folder to render.")
		runs  = flag.Int("runs", 5, "Renders measured per figure (the median is shown).")
		child = flag.String("child", "", "Internal: render the chart archive at this path once and exit.")
	)
	flag.Parse()
	if *child != "" {
		archive, err := os.ReadFile(*child)
		if err == nil {
			_, err = renderPlumb(archive)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	if err := run(*helm, *chart, *runs); err != nil {
		fmt.Fprintln(os.Stderr, "bench-helm:", err)
		os.Exit(1)
	}
}

func options() helmrender.Options {
	return helmrender.Options{
		ReleaseName: releaseName,
		Namespace:   namespace,
		IsInstall:   true,
		CRDs:        helmv2.CRDsCreateReplace,
		Capabilities: helmrender.Capabilities{
			KubeVersion: kubeVersion,
			APIVersions: append(append([]string(nil), common.DefaultVersionSet...), extraAPIs...),
		},
	}
}

// renderInWorker renders as render-controller does: in a render worker.
func renderInWorker(pool *renderworker.Pool, archive []byte) (*helmrender.Result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return pool.Helm(ctx, archive, options())
}

func renderPlumb(archive []byte) (*helmrender.Result, error) {
	return helmrender.Render(context.Background(), archive, options())
}

func helmArgs(archive string) []string {
	args := []string{"template", releaseName, archive, "--namespace", namespace, "--include-crds", "--kube-version", kubeVersion}
	for _, a := range extraAPIs {
		args = append(args, "--api-versions", a)
	}
	return args
}

type sample struct {
	wall, cpu time.Duration
	maxRSS    int64 // bytes
}

func run(helm, chartDir string, runs int) error {
	if _, err := os.Stat(helm); err != nil {
		return fmt.Errorf("the helm CLI is missing (%v): run `make bench-helm`, which builds it", err)
	}
	dir, err := os.MkdirTemp("", "plumb-bench-helm-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ch, err := loader.LoadDir(chartDir)
	if err != nil {
		return err
	}
	archivePath, err := chartutil.Save(ch, dir)
	if err != nil {
		return err
	}
	archive, err := os.ReadFile(archivePath)
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}

	// Fresh processes first, while this process is small: a child's peak
	// RSS (getrusage) starts at its parent's size, as the child begins as
	// a copy of it.
	var cold, cli []sample
	for i := 0; i < runs; i++ {
		s, err := timeProcess(self, "-child", archivePath)
		if err != nil {
			return fmt.Errorf("pkg/helmrender child: %w", err)
		}
		cold = append(cold, s)
		s, err = timeProcess(helm, helmArgs(archivePath)...)
		if err != nil {
			return fmt.Errorf("helm template: %w", err)
		}
		cli = append(cli, s)
	}

	// Then the outputs: both must render the same objects.
	res, err := renderPlumb(archive)
	if err != nil {
		return err
	}
	cliOut, err := exec.Command(helm, helmArgs(archivePath)...).Output()
	if err != nil {
		return fmt.Errorf("helm template: %w%s", err, stderrOf(err))
	}
	plumbSet, err := objectSet(res.Manifests)
	if err != nil {
		return fmt.Errorf("parsing pkg/helmrender's output: %w", err)
	}
	cliSet, err := objectSet(cliOut)
	if err != nil {
		return fmt.Errorf("parsing helm template's output: %w", err)
	}
	diff := compare(plumbSet, cliSet)

	// Warm, in process, and in a warm render worker (what render-controller
	// pays per render), alternately.
	pool := renderworker.NewPool(renderworker.Options{Workers: 1})
	defer pool.Close()
	if _, err := renderInWorker(pool, archive); err != nil { // the worker starts
		return err
	}
	var warm, inWorker []time.Duration
	var ms0, ms1 runtime.MemStats
	var allocated uint64
	for i := 0; i < runs; i++ {
		runtime.GC()
		runtime.ReadMemStats(&ms0)
		start := time.Now()
		if _, err := renderPlumb(archive); err != nil {
			return err
		}
		warm = append(warm, time.Since(start))
		runtime.ReadMemStats(&ms1)
		allocated += ms1.TotalAlloc - ms0.TotalAlloc
		start = time.Now()
		wres, err := renderInWorker(pool, archive)
		if err != nil {
			return err
		}
		inWorker = append(inWorker, time.Since(start))
		if !bytes.Equal(wres.Manifests, res.Manifests) {
			return errors.New("the render worker rendered other bytes than the render in process")
		}
	}
	allocPerRender := float64(allocated) / float64(runs)

	coldWall, cliWall := median(cold, func(s sample) int64 { return int64(s.wall) }), median(cli, func(s sample) int64 { return int64(s.wall) })
	coldCPU, cliCPU := median(cold, func(s sample) int64 { return int64(s.cpu) }), median(cli, func(s sample) int64 { return int64(s.cpu) })
	coldRSS, cliRSS := median(cold, func(s sample) int64 { return s.maxRSS }), median(cli, func(s sample) int64 { return s.maxRSS })
	warmWall := median(warm, func(d time.Duration) int64 { return int64(d) })
	workerWall := median(inWorker, func(d time.Duration) int64 { return int64(d) })
	fmt.Printf("helm benchmark: chart %s %s (%s), %d objects, %d runs each, median, %s/%s, GOMAXPROCS %d\n\n",
		res.ChartName, res.ChartVersion, chartDir, res.Objects, runs, runtime.GOOS, runtime.GOARCH, runtime.GOMAXPROCS(0))
	row := func(figure, a, b, ratio string) { fmt.Printf("| %-38s | %14s | %14s | %6s |\n", figure, a, b, ratio) }
	row("figure", "pkg/helmrender", "helm template", "ratio")
	fmt.Printf("|%s|%s|%s|%s|\n", strings.Repeat("-", 40), strings.Repeat("-", 16), strings.Repeat("-", 16), strings.Repeat("-", 8))
	row("time per render, fresh process", ms(coldWall), ms(cliWall), ratio(coldWall, cliWall))
	coldMin, cliMin := fastest(cold, func(s sample) int64 { return int64(s.wall) }), fastest(cli, func(s sample) int64 { return int64(s.wall) })
	row("fastest render, fresh process", ms(coldMin), ms(cliMin), ratio(coldMin, cliMin))
	row("CPU time per render, fresh process", ms(coldCPU), ms(cliCPU), ratio(coldCPU, cliCPU))
	row("time per render, warm in process", ms(warmWall), "-", "-")
	row("time per render, in a render worker", ms(workerWall), "-", "-")
	row("added by the worker", ms(workerWall-warmWall), "-", ratio(workerWall, warmWall))
	row("peak RSS of the render process", mib(float64(coldRSS)), mib(float64(cliRSS)), ratio(coldRSS, cliRSS))
	row("allocated per warm render (Go heap)", mib(allocPerRender), "-", "-")
	row("output bytes", fmt.Sprint(len(res.Manifests)), fmt.Sprint(len(cliOut)), "-")
	row("objects", fmt.Sprint(len(plumbSet)), fmt.Sprint(len(cliSet)), "-")
	fmt.Printf("\nratio = pkg/helmrender / helm template (below 1 is better); for the worker's row, in a worker / in process. Identical objects in both outputs: %v\n", diff == "")
	if diff != "" {
		return errors.New("pkg/helmrender and helm template rendered different objects:\n" + diff)
	}
	return nil
}

// objectSet parses a multi-document stream into the canonical YAML of
// each object (pkg/render's form), keyed by kind, namespace and name, with
// the annotation Plumb adds to crds/ CRDs under CreateReplace removed.
func objectSet(data []byte) (map[string]string, error) {
	nodes, err := kio.FromBytes(data)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(nodes))
	for _, n := range nodes {
		if err := n.PipeE(kyaml.ClearAnnotation(kustomizev1.PruneAnnotation)); err != nil {
			return nil, err
		}
		if len(n.GetAnnotations()) == 0 {
			if meta, _ := n.Pipe(kyaml.Lookup("metadata")); meta != nil {
				if err := meta.PipeE(kyaml.Clear("annotations")); err != nil {
					return nil, err
				}
			}
		}
		y, err := render.CanonicalYAML(n)
		if err != nil {
			return nil, err
		}
		key := n.GetApiVersion() + " " + n.GetKind() + " " + n.GetNamespace() + "/" + n.GetName()
		if _, dup := out[key]; dup {
			return nil, fmt.Errorf("two objects %s", key)
		}
		out[key] = y
	}
	return out, nil
}

// compare describes how two object sets differ, "" when they do not.
func compare(a, b map[string]string) string {
	var keys []string
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var out strings.Builder
	for _, k := range keys {
		x, inA := a[k]
		y, inB := b[k]
		switch {
		case !inB:
			fmt.Fprintf(&out, "only pkg/helmrender: %s\n", k)
		case !inA:
			fmt.Fprintf(&out, "only helm template: %s\n", k)
		case x != y:
			fmt.Fprintf(&out, "differs: %s\n--- pkg/helmrender\n%s--- helm template\n%s", k, x, y)
		}
	}
	return out.String()
}

// timeProcess runs a command to completion, its output discarded, and
// returns its wall and CPU time and peak resident set size.
func timeProcess(name string, args ...string) (sample, error) {
	cmd := exec.Command(name, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return sample{}, fmt.Errorf("%w: %s", err, stderr.String())
	}
	s := sample{wall: time.Since(start), cpu: cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		s.maxRSS = ru.Maxrss * 1024 // kilobytes on Linux
	}
	return s, nil
}

func stderrOf(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) && len(ee.Stderr) > 0 {
		return ": " + strings.TrimSpace(string(ee.Stderr))
	}
	return ""
}

func median[T any](xs []T, key func(T) int64) int64 {
	v := make([]int64, len(xs))
	for i, x := range xs {
		v[i] = key(x)
	}
	sort.Slice(v, func(i, j int) bool { return v[i] < v[j] })
	return v[len(v)/2]
}

// fastest is the least of xs by key: on shared cores, where other work
// only ever adds time, the figure least disturbed by it.
func fastest[T any](xs []T, key func(T) int64) int64 {
	m := key(xs[0])
	for _, x := range xs[1:] {
		m = min(m, key(x))
	}
	return m
}

func ratio(a, b int64) string { return fmt.Sprintf("%.2f", float64(a)/float64(b)) }

func ms(ns int64) string { return fmt.Sprintf("%.1f ms", float64(ns)/1e6) }

func mib(b float64) string { return fmt.Sprintf("%.1f MiB", b/(1<<20)) }
