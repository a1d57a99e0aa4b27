package renderworker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"plumb.dev/pkg/helmpackage"
	"plumb.dev/pkg/render"
)

// ChartOptions are a chart request's arguments besides its source.
type ChartOptions struct {
	// Limits bound the chart and its dependencies (helmpackage.Limits).
	Limits helmpackage.Limits
	// TimeoutName names the request's time limit in messages (a
	// HelmChart's source's "spec.timeout"); "" is Names.Timeout.
	TimeoutName string
}

// ChartPlan is helmpackage.MakePlan in a worker: the chart loaded, its
// file:// dependencies walked, the remote ones listed. Its failures are
// the chart's, as *render.Error of reason BuildFailed, or the worker's, of
// reason LimitExceeded (Kustomize).
func (p *Pool) ChartPlan(ctx context.Context, src helmpackage.Source, opts ChartOptions) (*helmpackage.Plan, error) {
	cs, blob, err := chartSourceOf(src)
	if err != nil {
		return nil, err
	}
	req := &request{ChartPlan: &chartPlanRequest{Source: cs, Limits: opts.Limits}, timeoutName: opts.TimeoutName}
	// A plan's answer carries no bytes.
	resp, _, err := p.do(ctx, req, blob, 1)
	if err != nil {
		return nil, err
	}
	return &helmpackage.Plan{Name: resp.ChartName, Version: resp.ChartVersion, Remote: resp.Remote}, nil
}

// ChartPackage is helmpackage.Build in a worker, with ChartPlan's errors.
// The worker writes the package into a folder the pool makes for this
// request under build.OutDir ("": os.TempDir()) and removes after; the
// package is at most Options.MaxFileBytes, the largest file a worker may
// write.
func (p *Pool) ChartPackage(ctx context.Context, src helmpackage.Source, build helmpackage.Options, opts ChartOptions) (*helmpackage.Result, error) {
	if p.opts.MaxFileBytes <= 0 {
		return nil, errors.New("this pool's workers may write no file, so they cannot package a chart (Options.MaxFileBytes)")
	}
	cs, blob, err := chartSourceOf(src)
	if err != nil {
		return nil, err
	}
	out, err := os.MkdirTemp(build.OutDir, "plumb-chart-package-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(out)
	req := &chartPackageRequest{Source: cs, Limits: opts.Limits, ValuesFiles: build.ValuesFiles,
		IgnoreMissing: build.IgnoreMissingValuesFiles, Version: build.Version, OutDir: out}
	// In the key's order, so that the same build is the same request.
	keys := slices.SortedFunc(maps.Keys(build.Remote), func(a, b helmpackage.Dependency) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.Repository, b.Repository), cmp.Compare(a.Version, b.Version))
	})
	size := int64(len(src.Archive))
	for _, k := range keys {
		tgz := build.Remote[k]
		req.Remote = append(req.Remote, remoteArchive{Dependency: k.Key(), Bytes: int64(len(tgz))})
		blob = append(blob, tgz)
		size += int64(len(tgz))
	}
	if size > maxRequestBlob {
		return nil, render.LimitError("the chart and its dependencies' archives are %d bytes, more than a %s takes (%d)", size, p.opts.Names.Worker, maxRequestBlob)
	}
	resp, tgz, err := p.do(ctx, &request{ChartPackage: req, timeoutName: opts.TimeoutName}, blob, p.opts.MaxFileBytes)
	if err != nil {
		return nil, err
	}
	return &helmpackage.Result{Name: resp.ChartName, Version: resp.ChartVersion, Archive: tgz, ValuesFiles: resp.ValuesFiles}, nil
}

// chartSourceOf returns src as it crosses to a worker, and the blob's
// parts that begin with its archive. Folders must be absolute: a worker
// runs in /.
func chartSourceOf(src helmpackage.Source) (chartSource, [][]byte, error) {
	cs := chartSource{Root: src.Root, Dir: src.Dir, Name: src.Name}
	if src.Archive != nil {
		if len(src.Archive) == 0 || src.Root != "" || src.Dir != "" {
			return cs, nil, errors.New("a chart is either a non-empty archive or a folder")
		}
		if int64(len(src.Archive)) > maxRequestBlob {
			return cs, nil, render.LimitError("the chart archive is %d bytes, more than a worker takes (%d)", len(src.Archive), maxRequestBlob)
		}
		cs.ArchiveBytes = int64(len(src.Archive))
		return cs, [][]byte{src.Archive}, nil
	}
	if !filepath.IsAbs(src.Root) || !filepath.IsAbs(src.Dir) {
		return cs, nil, fmt.Errorf("a chart folder must be given by absolute paths, not %q in %q", src.Dir, src.Root)
	}
	return cs, nil, nil
}
