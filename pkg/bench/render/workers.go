package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/internal/gentree"
	"plumb.dev/pkg/render"
	"plumb.dev/pkg/renderworker"
)

// runWorkers measures what a render worker adds to a build, as
// render-controller renders (pkg/renderworker): the same build in this
// process and through a warm worker, alternately in one run, on the
// generated overlay of objects and on a small one of 5. The targets are
// the issue's: at most 10 % added for 1,000 objects, at most 20 ms added
// for a small render.
func runWorkers(objects, runs int) error {
	pool := renderworker.NewPool(renderworker.Options{Workers: 1})
	defer pool.Close()
	runs = max(runs, 10)
	fmt.Printf("render workers: the same build in process and in a warm render worker, alternately, %d runs each, median\n\n", runs)
	fmt.Printf("%-40s %14s %14s %10s %8s\n", "build", "in process", "in a worker", "added", "ratio")
	fmt.Printf("%-40s %14s %14s %10s %8s\n", strings.Repeat("-", 40), strings.Repeat("-", 14), strings.Repeat("-", 14), strings.Repeat("-", 10), strings.Repeat("-", 8))
	for _, n := range []int{objects, 5} {
		dir, err := os.MkdirTemp("", "plumb-bench-render-workers-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		if err := gentree.Write(render.SourceDir(dir), n); err != nil {
			return err
		}
		spec := &kustomizev1.KustomizationSpec{Path: gentree.OverlayPath}
		var local, worker []time.Duration
		var outs [2][]byte
		// One of each first, unmeasured: the worker starts, both warm up.
		for r := -1; r < runs; r++ {
			start := time.Now()
			res, err := render.Build(context.Background(), dir, spec, render.Options{})
			if err != nil {
				return err
			}
			d := time.Since(start)
			outs[0] = res.Manifests
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			start = time.Now()
			wres, err := pool.Kustomize(ctx, dir, spec, renderworker.KustomizeOptions{})
			cancel()
			if err != nil {
				return err
			}
			wd := time.Since(start)
			outs[1] = wres.Manifests
			if r >= 0 {
				local, worker = append(local, d), append(worker, wd)
			}
		}
		if !bytes.Equal(outs[0], outs[1]) {
			return fmt.Errorf("%d objects: the worker rendered other bytes than the build in process", n)
		}
		l, w := median(local), median(worker)
		fmt.Printf("%-40s %14s %14s %10s %8.2f\n", fmt.Sprintf("%d objects with an overlay", n), ms(l), ms(w), ms(w-l), float64(w)/float64(l))
	}
	fmt.Print("\nadded = in a worker - in process; target: at most 10 % (ratio 1.10) for 1,000 objects, at most 20 ms for a small render. Same bytes from both.\n\n")
	return nil
}
