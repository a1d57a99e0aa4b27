package helm

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"helm.sh/helm/v4/pkg/chart/loader/archive"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	repo "helm.sh/helm/v4/pkg/repo/v1"
)

// Repository is a chart repository that dependencies may come from: an
// HTTP one with its verified index and fetcher, or an OCI registry.
type Repository struct {
	// URL is the repository's URL as its HelmRepository gives it.
	URL string
	// Index and Fetcher, for an HTTP repository.
	Index   *repo.IndexFile
	Fetcher *Fetcher
	// Registry and Ref (host/path), for an OCI repository.
	Registry *Registry
	Ref      string
}

// Pull resolves the semver range version of chart name and downloads it,
// at most maxBytes.
func (r *Repository) Pull(ctx context.Context, name, version string, maxBytes int64) (*chart.Chart, error) {
	var tgz []byte
	switch {
	case r.Registry != nil:
		ref := r.Ref + "/" + name
		tag, err := r.Registry.Resolve(ctx, ref, version)
		if err != nil {
			return nil, err
		}
		if tgz, err = r.Registry.Pull(ref, tag); err != nil {
			return nil, err
		}
	case r.Index != nil && r.Fetcher != nil:
		cv, u, err := ResolveChart(r.Index, r.URL, name, version)
		if err != nil {
			return nil, err
		}
		if tgz, err = r.Fetcher.Get(u, maxBytes); err != nil {
			return nil, err
		}
		if err := VerifyChartDigest(cv, tgz); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("repository %s cannot serve charts", r.URL)
	}
	ch, err := LoadArchive(tgz)
	if err != nil {
		return nil, err
	}
	if ch.Name() != name {
		return nil, fmt.Errorf("%s served chart %q for %q", r.URL, ch.Name(), name)
	}
	return ch, nil
}

// Dependencies completes a chart with the dependencies its Chart.lock (or,
// without one, its Chart.yaml) lists and its charts/ folder lacks.
type Dependencies struct {
	// Root is the source tree file:// dependencies must stay inside; ""
	// for a chart that came as an archive, which cannot have any.
	Root string
	// Repository returns the repository serving a dependency's
	// repository URL, or an error saying there is none.
	Repository func(url string) (*Repository, error)
	// MaxChartBytes bounds each download.
	MaxChartBytes int64
}

// maxDepth bounds file:// dependencies of dependencies.
const maxDepth = 10

// MaxDependencies bounds the dependencies one chart build adds, file://
// ones and theirs included: each is a download and a load.
const MaxDependencies = 100

// ErrDependencyLimit is returned past MaxDependencies, or when the added
// dependencies together decompress to more than the loader's budget for
// one chart (archive.MaxDecompressedChartSize), which otherwise each of
// them could fill.
var ErrDependencyLimit = errors.New("chart dependencies exceed a limit")

// buildBudget is what one Build may still add.
type buildBudget struct {
	count int
	bytes int64
}

// Build adds the missing dependencies of ch, whose folder is dir ("" for
// an archive). A file:// dependency is loaded from its folder and completed
// the same way; a remote one is pulled from its repository at the locked
// version, or the newest matching the range. At most MaxDependencies are
// added, decompressing to at most the loader's budget for one chart
// together; ctx ends the build between dependencies (and bounds OCI tag
// listings).
func (d Dependencies) Build(ctx context.Context, ch *chart.Chart, dir string) error {
	b := &buildBudget{count: MaxDependencies, bytes: archive.MaxDecompressedChartSize}
	return d.build(ctx, ch, dir, 0, b)
}

func (d Dependencies) build(ctx context.Context, ch *chart.Chart, dir string, depth int, b *buildBudget) error {
	if depth > maxDepth {
		return fmt.Errorf("chart %s: file:// dependencies nest deeper than %d", ch.Name(), maxDepth)
	}
	wanted := ch.Metadata.Dependencies
	if ch.Lock != nil && len(ch.Lock.Dependencies) > 0 {
		wanted = ch.Lock.Dependencies
	}
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
		sub, err := d.fetch(ctx, dep, dir, depth, b)
		if err != nil {
			return fmt.Errorf("dependency %q of chart %s: %w", dep.Name, ch.Name(), err)
		}
		// A file:// dependency's own dependencies are charged in fetch.
		if b.bytes -= ownSize(sub); b.bytes < 0 {
			return fmt.Errorf("chart %s: %w: its dependencies decompress to more than %d bytes together",
				ch.Name(), ErrDependencyLimit, archive.MaxDecompressedChartSize)
		}
		ch.AddDependency(sub)
	}
	return nil
}

// ownSize is what a loaded chart holds, its charts/ dependencies
// included but not those Build added to it: names and contents of its
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

func (d Dependencies) fetch(ctx context.Context, dep *chart.Dependency, dir string, depth int, b *buildBudget) (*chart.Chart, error) {
	r := dep.Repository
	switch {
	case strings.HasPrefix(r, "file://"):
		if dir == "" || d.Root == "" {
			return nil, errors.New("a file:// dependency of a packaged chart cannot be resolved")
		}
		p := filepath.Join(dir, filepath.FromSlash(strings.TrimPrefix(r, "file://")))
		if err := inside(d.Root, p); err != nil {
			return nil, fmt.Errorf("%s: %w", r, err)
		}
		sub, err := LoadDir(p)
		if err != nil {
			return nil, err
		}
		if sub.Name() != dep.Name {
			return nil, fmt.Errorf("%s holds chart %q", r, sub.Name())
		}
		if err := d.build(ctx, sub, p, depth+1, b); err != nil {
			return nil, err
		}
		return sub, nil
	case r == "":
		return nil, errors.New("it is not in charts/ and names no repository")
	case strings.HasPrefix(r, "@") || strings.HasPrefix(r, "alias:"):
		return nil, fmt.Errorf("repository %q names a local Helm repository alias; give its URL, served by a HelmRepository", r)
	}
	if d.Repository == nil {
		return nil, fmt.Errorf("no HelmRepository serves %s", r)
	}
	repository, err := d.Repository(r)
	if err != nil {
		return nil, err
	}
	return repository.Pull(ctx, dep.Name, dep.Version, d.MaxChartBytes)
}

// inside checks that p, symbolic links resolved, is root or under it.
func inside(root, p string) error {
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

// Inside checks that p, symbolic links resolved, is root or under it.
func Inside(root, p string) error { return inside(root, p) }
