package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/e2e/bench/benchkit"
	"plumb.dev/e2e/localenv"
	"plumb.dev/pkg/benchfig"
)

// singleRepo is the repository of the single large Kustomization.
const singleRepo = "single"

// singleRun is one new commit of the single Kustomization: from the push
// and from the new source artifact to Ready, against the bare loop over
// the same objects.
type singleRun struct {
	shape      singleShape
	objects    int
	pushed     time.Duration // push → Ready
	fromSource time.Duration // artifact of the new commit seen → Ready
	render     time.Duration // artifact seen → rendered artifact in the status
	bare       time.Duration
}

// singleShape is a spec of the single Kustomization (issue 46): "bare"
// sets nothing kustomize acts on, "targetNamespace" sets the one field
// most Flux users set, and "images-patch" an image and a JSON 6902 patch of
// every ConfigMap, each timed against a bare loop of its own run.
type singleShape string

const (
	shapeBare            singleShape = "bare"
	shapeTargetNamespace singleShape = "targetNamespace"
	shapeImagesPatch     singleShape = "images-patch"
)

var singleShapes = []singleShape{shapeBare, shapeTargetNamespace, shapeImagesPatch}

// namespace is the namespace (and Kustomization name) of the shape's r-th
// run; the bare shape keeps the names it had before there were shapes.
func (s singleShape) namespace(r int) string {
	if s == shapeBare {
		return fmt.Sprintf("single-%d", r)
	}
	return fmt.Sprintf("single-%s-%d", strings.ToLower(string(s)), r)
}

// target is the ratio to the bare loop the shape is to meet.
func (s singleShape) target() float64 {
	if s == shapeBare {
		return targetSingleRatio
	}
	return targetShapeRatio
}

// apply sets the shape's fields on spec.
func (s singleShape) apply(spec *kustomizev1.KustomizationSpec, ns string) {
	switch s {
	case shapeTargetNamespace:
		// The objects name ns too: kustomize must rewrite each one all
		// the same, and the applied objects are the bare shape's.
		spec.TargetNamespace = ns
	case shapeImagesPatch:
		spec.Images = []kustomizev1.Image{{Name: "nginx", NewTag: "1.27.0"}}
		spec.Patches = []kustomizev1.Patch{{
			Patch:  `[{"op": "add", "path": "/metadata/labels/patched", "value": "true"}]`,
			Target: &kustomizev1.Selector{Kind: "ConfigMap"},
		}}
	}
}

// parseShapes reads -single-shapes: a comma-separated list of shapes.
func parseShapes(list string) ([]singleShape, error) {
	var out []singleShape
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		if !slices.Contains(singleShapes, singleShape(name)) {
			return nil, fmt.Errorf("unknown single shape %q: want some of %v", name, singleShapes)
		}
		out = append(out, singleShape(name))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("-single-shapes names no shape: want some of %v", singleShapes)
	}
	return out, nil
}

// singleObjects are n objects of the four kinds in turn, in namespace ns.
func singleObjects(ns, prefix string, n int) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for i := 0; len(out) < n; i++ {
		for _, o := range appObjects(ns, fmt.Sprintf("%s%04d-", prefix, i)) {
			if len(out) < n {
				out = append(out, o)
			}
		}
	}
	return out
}

// runSingle measures one Kustomization of -single-objects objects, -single-runs
// times for each of -single-shapes. Each run has a folder, namespace and
// Kustomization of its own:
// the Kustomization is made Ready on one seed ConfigMap, then a commit
// adding the objects is pushed and the GitRepository asked to fetch it, as
// the Receiver does on a push; the clock runs until Ready for that commit.
// The Kustomization is suspended after its run, so later pushes leave it
// alone. The bare loop creates the same objects in a namespace of its own.
func (b *bench) runSingle(ctx context.Context) ([]singleRun, error) {
	c := b.c
	names := []string{fleetNamespace}
	for _, shape := range c.singleShapes {
		for r := range c.singleRuns {
			names = append(names, shape.namespace(r), "bare-"+shape.namespace(r))
		}
	}
	if err := b.ensureNamespaces(ctx, names); err != nil {
		return nil, err
	}
	if err := b.env.Git.CreateRepo(ctx, singleRepo); err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp(b.env.StateDir, "single-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	clone, err := localenv.InitClone(ctx, b.env.Git.URL(singleRepo), filepath.Join(work, singleRepo))
	if err != nil {
		return nil, err
	}
	seed := map[string]string{}
	for _, shape := range c.singleShapes {
		for r := range c.singleRuns {
			ns := shape.namespace(r)
			m, err := manifests(appObjects(ns, "seed-")[:1])
			if err != nil {
				return nil, err
			}
			seed[ns+"/seed.yaml"] = m
		}
	}
	if err := clone.Write(seed); err != nil {
		return nil, err
	}
	if _, err := clone.CommitAndPush(ctx, "Seed"); err != nil {
		return nil, err
	}
	if err := b.createSources(ctx, []string{singleRepo}, time.Hour); err != nil {
		return nil, err
	}
	var runs []singleRun
	for _, shape := range c.singleShapes {
		for r := range c.singleRuns {
			run, err := b.singleOnce(ctx, clone, shape, r)
			if err != nil {
				return nil, fmt.Errorf("single Kustomization %s, run %d: %w", shape, r+1, err)
			}
			say("   single Kustomization (%s) of %d objects, run %d: push → Ready %s, new artifact → Ready %s (rendered after %s); bare loop %s",
				shape, run.objects, r+1, benchfig.Round(run.pushed), benchfig.Round(run.fromSource), benchfig.Round(run.render), benchfig.Round(run.bare))
			runs = append(runs, run)
			b.lastSingle = run.pushed
		}
	}
	return runs, nil
}

func (b *bench) singleOnce(ctx context.Context, clone *localenv.Clone, shape singleShape, r int) (singleRun, error) {
	c := b.c
	ns := shape.namespace(r)
	run := singleRun{shape: shape, objects: c.singleObjects}

	bare := singleObjects("bare-"+ns, "bare-", c.singleObjects)
	start := time.Now()
	if err := benchkit.ApplyAll(ctx, b.fast, bare, b.c.workers); err != nil {
		return run, fmt.Errorf("bare loop: %w", err)
	}
	run.bare = time.Since(start)

	ks := &kustomizev1.Kustomization{
		ObjectMeta: metav1.ObjectMeta{Name: ns, Namespace: fleetNamespace},
		Spec: kustomizev1.KustomizationSpec{
			SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: singleRepo},
			Path:      "./" + ns,
			Interval:  metav1.Duration{Duration: time.Hour},
			Timeout:   &metav1.Duration{Duration: 5 * time.Minute},
			Prune:     true,
		},
	}
	shape.apply(&ks.Spec, ns)
	if err := b.wc.Create(ctx, ks); err != nil {
		return run, err
	}
	key := client.ObjectKeyFromObject(ks)
	head, err := clone.Head(ctx)
	if err != nil {
		return run, err
	}
	if _, err := b.waitKustomization(ctx, key, revision(head), 3*time.Minute); err != nil {
		return run, fmt.Errorf("the seed commit: %w", err)
	}

	m, err := manifests(singleObjects(ns, "obj-", c.singleObjects))
	if err != nil {
		return run, err
	}
	if err := clone.Write(map[string]string{ns + "/objects.yaml": m}); err != nil {
		return run, err
	}
	// The last run of each shape is profiled, when asked: from the push
	// for as long as the run before it took, at least 5 s.
	stopProfiles := func() {}
	if r == c.singleRuns-1 {
		name := "single"
		if shape != shapeBare {
			name += "-" + string(shape)
		}
		stopProfiles = b.profiles(ctx, name, max(5, int(math.Ceil(b.lastSingle.Seconds()))))
	}
	defer stopProfiles()
	before, err := b.meter.Snapshot(ctx)
	if err != nil {
		return run, err
	}
	pushed := time.Now()
	sha, err := clone.CommitAndPush(ctx, fmt.Sprintf("Add %d objects to %s", c.singleObjects, ns))
	if err != nil {
		return run, err
	}
	// What the Receiver does on a push webhook.
	repo := &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Name: singleRepo, Namespace: fleetNamespace}}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, meta.ReconcileRequestAnnotation, time.Now().UTC().Format(time.RFC3339Nano))
	if err := b.fast.Patch(ctx, repo, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		return run, err
	}
	artifactAt := make(chan time.Time, 1)
	go func() {
		for ctx.Err() == nil {
			got := &sourcev1.GitRepository{}
			if err := b.wc.Get(ctx, client.ObjectKeyFromObject(repo), got); err == nil &&
				got.Status.Artifact != nil && got.Status.Artifact.Revision == revision(sha) {
				artifactAt <- time.Now()
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	readyAt, renderedAt, err := b.waitRenderedAndReady(ctx, key, revision(sha), 5*time.Minute)
	if err != nil {
		return run, err
	}
	run.pushed = readyAt.Sub(pushed)
	select {
	case at := <-artifactAt:
		run.fromSource = readyAt.Sub(at)
		run.render = renderedAt.Sub(at)
	case <-time.After(10 * time.Second):
		return run, fmt.Errorf("the GitRepository's artifact for %s was never seen", sha)
	}
	got := &kustomizev1.Kustomization{}
	if err := b.wc.Get(ctx, key, got); err != nil {
		return run, err
	}
	// What the run cost the API server, and how long sync-controller's
	// own run took (its history): where the time beyond the bare loop is.
	time.Sleep(settle)
	if after, err := b.meter.Snapshot(ctx); err == nil {
		syncTook := "?"
		if h := got.Status.History; len(h) > 0 {
			syncTook = benchfig.Round(h[0].LastReconciledDuration.Duration).String()
		}
		say("   run %d: %s; sync-controller's run %s; requests: %s", r+1, benchfig.Round(run.fromSource), syncTook,
			benchkit.TopKinds(benchkit.Diff(before, after).APIServer.ByKind(), 8, 0))
	}
	if n := len(got.Status.Inventory.Entries); n != c.singleObjects+1 {
		return run, fmt.Errorf("the Kustomization is Ready with %d objects in its inventory, not %d", n, c.singleObjects+1)
	}
	// Later pushes (the next runs) leave this one alone.
	suspend := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"suspend":true}}`))
	return run, b.fast.Patch(ctx, got, suspend)
}

// revision is the revision string of a commit on main.
func revision(sha string) string { return "main@sha1:" + sha }

// waitKustomization watches one Kustomization until it is Ready with
// revision applied at its generation and returns when the watch said so.
func (b *bench) waitKustomization(ctx context.Context, key client.ObjectKey, revision string, timeout time.Duration) (time.Time, error) {
	ready, _, err := b.waitRenderedAndReady(ctx, key, revision, timeout)
	return ready, err
}

// waitRenderedAndReady is waitKustomization that also returns when the
// watch first saw render-controller's artifact of revision in the status.
func (b *bench) waitRenderedAndReady(ctx context.Context, key client.ObjectKey, revision string, timeout time.Duration) (ready, rendered time.Time, err error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	fail := func(err error) (time.Time, time.Time, error) { return time.Time{}, time.Time{}, err }
	w, err := b.wc.Watch(ctx, &kustomizev1.KustomizationList{}, client.InNamespace(key.Namespace), client.MatchingFields{"metadata.name": key.Name})
	if err != nil {
		return fail(err)
	}
	defer w.Stop()
	var last *kustomizev1.Kustomization
	for {
		select {
		case <-ctx.Done():
			msg := "none seen"
			if last != nil {
				if ready := conditions.Get(last, meta.ReadyCondition); ready != nil {
					msg = fmt.Sprintf("Ready=%s %s: %.300s", ready.Status, ready.Reason, ready.Message)
				}
			}
			return fail(fmt.Errorf("%s not Ready at %s in %s (%s)", key, revision, timeout, msg))
		case ev, ok := <-w.ResultChan():
			if !ok {
				return fail(fmt.Errorf("the watch of %s closed", key))
			}
			k, isKs := ev.Object.(*kustomizev1.Kustomization)
			if !isKs {
				continue
			}
			last = k
			if rendered.IsZero() && k.Status.RenderedArtifact != nil && k.Status.RenderedArtifact.Revision == revision {
				rendered = time.Now()
			}
			if k.Status.ObservedGeneration == k.Generation && conditions.IsReady(k) && k.Status.LastAppliedRevision == revision {
				if rendered.IsZero() {
					rendered = time.Now()
				}
				return time.Now(), rendered, nil
			}
		}
	}
}
