package helmpackage

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"

	"helm.sh/helm/v4/pkg/chart/loader/archive"
	chart "helm.sh/helm/v4/pkg/chart/v2"
)

// Source is the chart to plan or build: a folder of a source tree (Root
// and Dir) or an archive a repository served (Archive, with the Name it
// must have).
type Source struct {
	// Root is the source tree that Dir and every file:// dependency must
	// stay inside, symbolic links resolved; "" for an archive.
	Root string
	// Dir is the chart's folder, inside Root.
	Dir string
	// Archive is the chart archive, when the chart is not a folder.
	Archive []byte
	// Name, for an archive, is the chart's name as the HelmChart asks for
	// it: an archive holding another chart is refused.
	Name string
}

// Limits bound one plan or build.
type Limits struct {
	// MaxExtractedBytes is the SDK loader's budget for the decompressed
	// files of one chart (archive.MaxDecompressedChartSize,
	// --helm-chart-max-extracted-size), and the budget of the
	// dependencies a build adds, together. Zero is
	// DefaultMaxExtractedSize.
	MaxExtractedBytes int64 `json:"maxExtractedBytes,omitempty"`
}

func (l Limits) extracted() int64 {
	if l.MaxExtractedBytes > 0 {
		return l.MaxExtractedBytes
	}
	return DefaultMaxExtractedSize
}

// Dependency is a dependency a chart lacks that a chart repository
// serves: what the parent pulls between a plan and a build.
type Dependency struct {
	// Name, Repository (the URL) and Version (an exact version from
	// Chart.lock, or Chart.yaml's range) as the chart gives them.
	Name       string `json:"name"`
	Repository string `json:"repository"`
	Version    string `json:"version"`
	// Chart names the chart that asked for it first, for messages.
	Chart string `json:"chart,omitempty"`
}

// Key is the dependency without Chart: the same name, repository and
// version is the same archive whichever chart asks for it.
func (d Dependency) Key() Dependency {
	return Dependency{Name: d.Name, Repository: d.Repository, Version: d.Version}
}

// Plan is what a chart needs before it can be built.
type Plan struct {
	// Name and Version are the chart's, as Chart.yaml gives them.
	Name    string
	Version string
	// Remote are the dependencies to pull from chart repositories, each
	// once, in the order the chart and its file:// dependencies list
	// them.
	Remote []Dependency
}

// Options are a build's arguments besides its source.
type Options struct {
	// ValuesFiles are merged, in order, over values.yaml
	// (MergeValuesFiles).
	ValuesFiles []string
	// IgnoreMissingValuesFiles skips a values file the chart does not
	// have instead of failing the build.
	IgnoreMissingValuesFiles bool
	// Version, when set, replaces the chart's version.
	Version string
	// Remote are the archives of the plan's Remote dependencies, by
	// Dependency.Key.
	Remote map[Dependency][]byte
	// OutDir is the folder the package is written to (Package); "" is a
	// temporary folder.
	OutDir string
}

// Result is a packaged chart.
type Result struct {
	Name    string
	Version string
	// Archive is the package's bytes: the same chart and options give the
	// same bytes.
	Archive []byte
	// ValuesFiles are the values files merged: Options.ValuesFiles less
	// the missing ones skipped.
	ValuesFiles []string
}

// maxDepth bounds file:// dependencies of dependencies.
const maxDepth = 10

// MaxDependencies bounds the dependencies one chart build adds, file://
// ones and theirs included: each is a download and a load.
const MaxDependencies = 100

// ErrDependencyLimit is returned past MaxDependencies, or when the added
// dependencies together decompress to more than the loader's budget for
// one chart (Limits.MaxExtractedBytes), which otherwise each of them could
// fill.
var ErrDependencyLimit = errors.New("chart dependencies exceed a limit")

// loading holds the SDK loader's process-wide budget
// (archive.MaxDecompressedChartSize) for one plan or build at a time: a
// chart worker serves one request at a time, and tests may run several.
var loading sync.Mutex

// MakePlan loads the chart and its file:// dependencies (and theirs),
// inside the source tree, and lists the dependencies left to pull from
// chart repositories: Chart.lock's when the chart has one, Chart.yaml's
// otherwise, those in charts/ aside. Every budget of Build is kept, so a
// chart that passes one fails here, before anything is downloaded.
func MakePlan(ctx context.Context, src Source, limits Limits) (*Plan, error) {
	loading.Lock()
	defer loading.Unlock()
	archive.MaxDecompressedChartSize = limits.extracted()
	plan := &Plan{}
	seen := map[Dependency]bool{}
	w := &walker{root: src.Root, budget: newBudget(limits), remote: func(dep *chart.Dependency, parent *chart.Chart) (*chart.Chart, error) {
		d := Dependency{Name: dep.Name, Repository: dep.Repository, Version: dep.Version, Chart: parent.Name()}
		if !seen[d.Key()] {
			seen[d.Key()] = true
			plan.Remote = append(plan.Remote, d)
		}
		return nil, nil
	}}
	ch, err := w.load(ctx, src)
	if err != nil {
		return nil, err
	}
	plan.Name, plan.Version = ch.Name(), ch.Metadata.Version
	return plan, nil
}

// Build loads the chart as MakePlan does, adds its file:// dependencies
// and the pulled archives of its remote ones (each loaded, checked to be
// the chart asked for), merges opts.ValuesFiles over values.yaml, sets
// opts.Version and packages it. At most MaxDependencies are added,
// decompressing to at most Limits.MaxExtractedBytes together; ctx ends the
// build between dependencies.
func Build(ctx context.Context, src Source, opts Options, limits Limits) (*Result, error) {
	loading.Lock()
	defer loading.Unlock()
	archive.MaxDecompressedChartSize = limits.extracted()
	w := &walker{root: src.Root, budget: newBudget(limits), remote: func(dep *chart.Dependency, _ *chart.Chart) (*chart.Chart, error) {
		d := Dependency{Name: dep.Name, Repository: dep.Repository, Version: dep.Version}
		tgz, ok := opts.Remote[d]
		if !ok {
			return nil, fmt.Errorf("%s was not pulled", dep.Repository)
		}
		sub, err := LoadArchive(tgz)
		if err != nil {
			return nil, err
		}
		if sub.Name() != dep.Name {
			return nil, fmt.Errorf("%s served chart %q for %q", dep.Repository, sub.Name(), dep.Name)
		}
		return sub, nil
	}}
	ch, err := w.load(ctx, src)
	if err != nil {
		return nil, err
	}
	used, err := MergeValuesFiles(ch, opts.ValuesFiles, opts.IgnoreMissingValuesFiles)
	if err != nil {
		return nil, err
	}
	if opts.Version != "" {
		ch.Metadata.Version = opts.Version
	}
	tgz, err := Package(ch, opts.OutDir)
	if err != nil {
		return nil, err
	}
	return &Result{Name: ch.Name(), Version: ch.Metadata.Version, Archive: tgz, ValuesFiles: used}, nil
}

// walker loads a chart and completes it with its dependencies.
type walker struct {
	root   string
	budget *budget
	// remote returns the chart of a dependency a repository serves, or
	// nil to add nothing (a plan).
	remote func(dep *chart.Dependency, parent *chart.Chart) (*chart.Chart, error)
}

// budget is what one walk may still add.
type budget struct {
	count int
	bytes int64
	limit int64
}

func newBudget(l Limits) *budget {
	return &budget{count: MaxDependencies, bytes: l.extracted(), limit: l.extracted()}
}

// load loads the source's chart and its dependencies.
func (w *walker) load(ctx context.Context, src Source) (*chart.Chart, error) {
	if src.Archive != nil {
		ch, err := LoadArchive(src.Archive)
		if err != nil {
			return nil, err
		}
		if src.Name != "" && ch.Name() != src.Name {
			return nil, fmt.Errorf("the repository served chart %q for %q", ch.Name(), src.Name)
		}
		// An archive has no folder: a file:// dependency of it fails.
		w.root = ""
		return ch, w.complete(ctx, ch, "", 0)
	}
	if err := Inside(src.Root, src.Dir); err != nil {
		return nil, err
	}
	ch, err := LoadDir(src.Dir)
	if err != nil {
		return nil, err
	}
	return ch, w.complete(ctx, ch, src.Dir, 0)
}

// complete adds the missing dependencies of ch, whose folder is dir (""
// for an archive). A file:// dependency is loaded from its folder and
// completed the same way; a remote one comes from w.remote.
func (w *walker) complete(ctx context.Context, ch *chart.Chart, dir string, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("chart %s: file:// dependencies nest deeper than %d", ch.Name(), maxDepth)
	}
	wanted := ch.Metadata.Dependencies
	if ch.Lock != nil && len(ch.Lock.Dependencies) > 0 {
		wanted = ch.Lock.Dependencies
	}
	b := w.budget
	for _, dep := range wanted {
		if dep == nil || present(ch, dep.Name) {
			continue
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("chart %s: resolving dependencies: %w", ch.Name(), context.Cause(ctx))
		}
		if b.count--; b.count < 0 {
			return fmt.Errorf("chart %s: %w: more than %d dependencies", ch.Name(), ErrDependencyLimit, MaxDependencies)
		}
		sub, err := w.dependency(ctx, ch, dep, dir, depth)
		if err != nil {
			return fmt.Errorf("dependency %q of chart %s: %w", dep.Name, ch.Name(), err)
		}
		if sub == nil {
			continue // a plan's remote dependency
		}
		// A file:// dependency's own dependencies are charged in
		// dependency.
		if b.bytes -= ownSize(sub); b.bytes < 0 {
			return fmt.Errorf("chart %s: %w: its dependencies decompress to more than %d bytes together",
				ch.Name(), ErrDependencyLimit, b.limit)
		}
		ch.AddDependency(sub)
	}
	return nil
}

// ownSize is what a loaded chart holds, its charts/ dependencies
// included but not those a walk added to it: names and contents of its
// files.
func ownSize(ch *chart.Chart) int64 {
	var n int64
	for _, f := range ch.Raw {
		n += int64(len(f.Name) + len(f.Data))
	}
	return n
}

func present(ch *chart.Chart, name string) bool {
	for _, c := range ch.Dependencies() {
		if c.Name() == name {
			return true
		}
	}
	return false
}

func (w *walker) dependency(ctx context.Context, parent *chart.Chart, dep *chart.Dependency, dir string, depth int) (*chart.Chart, error) {
	r := dep.Repository
	switch {
	case strings.HasPrefix(r, "file://"):
		if dir == "" || w.root == "" {
			return nil, errors.New("a file:// dependency of a packaged chart cannot be resolved")
		}
		p := filepath.Join(dir, filepath.FromSlash(strings.TrimPrefix(r, "file://")))
		if err := Inside(w.root, p); err != nil {
			return nil, fmt.Errorf("%s: %w", r, err)
		}
		sub, err := LoadDir(p)
		if err != nil {
			return nil, err
		}
		if sub.Name() != dep.Name {
			return nil, fmt.Errorf("%s holds chart %q", r, sub.Name())
		}
		if err := w.complete(ctx, sub, p, depth+1); err != nil {
			return nil, err
		}
		return sub, nil
	case r == "":
		return nil, errors.New("it is not in charts/ and names no repository")
	case strings.HasPrefix(r, "@") || strings.HasPrefix(r, "alias:"):
		return nil, fmt.Errorf("repository %q names a local Helm repository alias; give its URL, served by a HelmRepository", r)
	}
	return w.remote(dep, parent)
}

// Inside checks that p, symbolic links resolved, is root or under it.
func Inside(root, p string) error {
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return err
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return fmt.Errorf("not found in the source")
	}
	rel, err := filepath.Rel(realRoot, real)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return fmt.Errorf("leaves the source")
	}
	return nil
}
