package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/benchfig"
	"plumb.dev/pkg/render"
)

// shape is a spec of the Kustomization (issue 46) that makes render-
// controller's work part of the figure: the stand-in render renders a
// source tree with pkg/render under the spec, inside the clock, instead of
// serving pre-rendered manifests. "targetNamespace" is the field most Flux
// users set (the objects in Git name no namespace); "images-patch" is an
// image and a JSON 6902 patch of every ConfigMap, which pkg/render's fast
// path does with kustomize's own transformers, object by object
// (docs/design/render-fast-path.md). Each is timed against a bare loop of its own run over the same
// rendered objects.
type shape string

const (
	shapeTargetNamespace shape = "targetNamespace"
	shapeImagesPatch     shape = "images-patch"
)

var allShapes = []shape{shapeTargetNamespace, shapeImagesPatch}

// parseShapes reads -shapes: a comma-separated list, empty for none.
func parseShapes(list string) ([]shape, error) {
	var out []shape
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		if !slices.Contains(allShapes, shape(name)) {
			return nil, fmt.Errorf("unknown shape %q: want some of %v", name, allShapes)
		}
		out = append(out, shape(name))
	}
	return out, nil
}

// spec sets the shape's fields on spec for a Kustomization in ns.
func (s shape) spec(spec *kustomizev1.KustomizationSpec, ns string) {
	spec.Path = "app"
	switch s {
	case shapeTargetNamespace:
		spec.TargetNamespace = ns
	case shapeImagesPatch:
		spec.Images = []kustomizev1.Image{{Name: "registry.example/app", NewTag: "2.0"}}
		spec.Patches = []kustomizev1.Patch{{
			Patch:  `[{"op": "add", "path": "/metadata/labels/patched", "value": "true"}]`,
			Target: &kustomizev1.Selector{Kind: "ConfigMap"},
		}}
	}
}

// writeTree writes the workload's objects for ns into a new work folder
// of pkg/render, one file per object under "app", as they would be in
// Git for the shape: without a namespace for targetNamespace. The caller
// removes the folder.
func (s shape) writeTree(w workload, ns string, n int) (string, error) {
	work, err := os.MkdirTemp("", "plumb-syncbench-shape-")
	if err != nil {
		return "", err
	}
	dir := filepath.Join(render.SourceDir(work), "app")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return work, err
	}
	for i, doc := range strings.Split(manifests(w, ns, n), "---\n") {
		if s == shapeTargetNamespace {
			doc = strings.Replace(doc, "  namespace: "+ns+"\n", "", 1)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("object-%04d.yaml", i)), []byte(doc), 0o644); err != nil {
			return work, err
		}
	}
	return work, nil
}

// render renders the shape's tree for ns with pkg/render, as render-
// controller would, and returns the manifests and the time the build took.
func (s shape) render(ctx context.Context, ns string, n int, work string) (string, time.Duration, error) {
	var spec kustomizev1.KustomizationSpec
	s.spec(&spec, ns)
	start := time.Now()
	res, err := render.Build(ctx, work, &spec, render.Options{})
	took := time.Since(start)
	if err != nil {
		return "", took, err
	}
	if len(res.Objects) != n {
		return "", took, fmt.Errorf("rendered %d objects, want %d", len(res.Objects), n)
	}
	return string(res.Manifests), took, nil
}

// shapeFigures are one shape's runs.
type shapeFigures struct {
	shape   shape
	initial series // render start to Ready
	bare    series
}

// shapePhase times, for each shape, the first sync of the mixed workload
// from the start of the render to Ready against the bare loop applying
// the same rendered objects, the two sides alternating run by run.
func (b *bench) shapePhase(ctx context.Context, shapes []shape) error {
	w := mixed
	for _, s := range shapes {
		fig := &shapeFigures{shape: s}
		b.res.shapes = append(b.res.shapes, fig)
		for r := range b.c.runs {
			sides := []func() error{
				func() error {
					x, err := b.shapeInitial(ctx, s, w, r == b.c.runs-1)
					fig.initial.add(x)
					return err
				},
				func() error {
					x, err := b.shapeBare(ctx, s, w)
					fig.bare.add(x)
					return err
				},
			}
			for i := range sides {
				if err := sides[(i+r)%len(sides)](); err != nil {
					return fmt.Errorf("shape %s, run %d: %w", s, r+1, err)
				}
			}
		}
	}
	return nil
}

// shapeInitial is one controller run of a shape: a fresh Kustomization
// with the shape's spec, its tree rendered inside the clock; profiled
// (-profile-dir: initial-shape-<shape>.pprof, render included) when asked.
func (b *bench) shapeInitial(ctx context.Context, s shape, w workload, profile bool) (sample, error) {
	ns, err := b.env.Namespace(ctx, "bench-"+strings.ToLower(string(s)))
	if err != nil {
		return sample{}, err
	}
	work, err := s.writeTree(w, ns, b.c.objects)
	defer os.RemoveAll(work)
	if err != nil {
		return sample{}, err
	}
	ks := newKustomization(ns)
	s.spec(&ks.Spec, ns)
	name := ""
	if profile {
		name = "initial-shape-" + string(s)
	}
	_, x, err := b.initialSync(ctx, ks, w, name, func() (string, time.Duration, error) {
		return s.render(ctx, ns, b.c.objects, work)
	})
	if err == nil {
		fmt.Fprintf(os.Stderr, "   shape %s: render %s, then to Ready %s\n", s, benchfig.Round(x.render), benchfig.Round(x.d-x.render))
	}
	return x, err
}

// shapeBare renders the shape's tree for a fresh namespace (outside the
// clock) and times the bare loop applying what it rendered.
func (b *bench) shapeBare(ctx context.Context, s shape, w workload) (sample, error) {
	ns, err := b.env.Namespace(ctx, "bench-bare")
	if err != nil {
		return sample{}, err
	}
	work, err := s.writeTree(w, ns, b.c.objects)
	defer os.RemoveAll(work)
	if err != nil {
		return sample{}, err
	}
	data, _, err := s.render(ctx, ns, b.c.objects, work)
	if err != nil {
		return sample{}, err
	}
	objs, err := stamped(data, ns)
	if err != nil {
		return sample{}, err
	}
	if err := b.quiesce(ctx); err != nil {
		return sample{}, err
	}
	b.bareCounter.reset()
	cpu, elapsed, err := b.timedApplyAll(ctx, objs, b.c.controller.applyConcurrency)
	busy := b.bareCounter.occupancy(b.c.controller.applyConcurrency)
	if err == nil {
		fmt.Fprintf(os.Stderr, "   bare loop, shape %s: %s, CPU (API server and etcd, bench process) %s; its requests: %s\n", s, benchfig.Round(elapsed), cpu, busy)
	}
	return sample{d: elapsed, cpu: cpu, busy: busy}, err
}
