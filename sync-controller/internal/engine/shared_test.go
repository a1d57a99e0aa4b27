package engine

import (
	"context"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/diff"
	"plumb.dev/pkg/manage"
)

// ApplySet never changes the desired objects: pkg/plan hands it the
// prepared objects themselves, which sync-controller's manifests cache
// keeps for the next run and which two runs may apply at once. Every path
// of applyOne is taken on shared objects — a create, the same objects
// applied by two ApplySets at once (under -race, a write to a shared
// object in either is a race), nothing to do, a drift found by a dry-run
// and reverted, a drift kept by an ignore rule (which writes the live
// value into its copy), a report only, a preview, a create-only object, a
// replaced one — and the objects are as Prepare left them after all.
func TestApplySetLeavesTheDesiredObjectsAsTheyAre(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	e := newEnvEngine(t, nil)
	ns, err := e.env.Namespace(ctx, "shared-desired")
	g.Expect(err).NotTo(HaveOccurred())
	owner := manage.Owner{Namespace: ns, Name: "app"}

	objs := mixedObjects(ns, 9)
	createOnly := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "create-only", "namespace": ns,
			"annotations": map[string]any{"plumb.dev/ssa": "IfNotPresent"}},
		"data": map[string]any{"key": "value"}}}
	replaced := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "replaced", "namespace": ns,
			"annotations": map[string]any{"argocd.argoproj.io/sync-options": "Replace=true"}},
		"data": map[string]any{"key": "value"}}}
	objs = append(objs, createOnly, replaced)
	hashes, err := e.Prepare(objs, Options{Owner: owner, DefaultNamespace: ns})
	g.Expect(err).NotTo(HaveOccurred())
	prepared := make([]*unstructured.Unstructured, len(objs))
	for i, o := range objs {
		prepared[i] = o.DeepCopy()
	}
	apply := func(opts Options) []Result {
		opts.Owner = owner
		var all []Result
		for _, group := range kindGroups(objs) {
			results, err := e.ApplySet(ctx, group, hashes, opts)
			g.Expect(err).NotTo(HaveOccurred())
			all = append(all, results...)
		}
		return all
	}
	waitCached := func(name string) {
		g.Eventually(func(g Gomega) {
			cm := &unstructured.Unstructured{}
			cm.SetAPIVersion("v1")
			cm.SetKind("ConfigMap")
			g.Expect(e.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cm)).To(Succeed())
			live, err := e.watcher.Lookup(ctx, cm.GroupVersionKind(), ns, name)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(live).NotTo(BeNil())
			g.Expect(live.ResourceVersion).To(Equal(cm.GetResourceVersion()))
		}).WithTimeout(10 * time.Second).Should(Succeed())
	}
	edit := func(name, value string) {
		cm := &unstructured.Unstructured{}
		cm.SetAPIVersion("v1")
		cm.SetKind("ConfigMap")
		g.Expect(e.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cm)).To(Succeed())
		g.Expect(unstructured.SetNestedField(cm.Object, value, "data", "key")).To(Succeed())
		g.Expect(e.client.Update(ctx, cm, client.FieldOwner("kubectl-edit"))).To(Succeed())
		waitCached(name)
	}

	// Created, by two at once on the same objects.
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Go(func() {
			// Not the replaced one: two writes of it whole at once conflict.
			for _, group := range kindGroups(objs[:len(objs)-1]) {
				if _, err := e.ApplySet(ctx, group, hashes, Options{Owner: owner}); err != nil {
					errs[i] = err
					return
				}
			}
		})
	}
	wg.Wait()
	// Two creates of one object at once: the loser's apply meets the
	// winner's object and applies over it, no error.
	g.Expect(errs).To(HaveEach(BeNil()))
	apply(Options{NotWaitedOn: true})
	for _, o := range objs {
		if o.GetKind() == "ConfigMap" {
			waitCached(o.GetName())
		}
	}
	apply(Options{})

	// Drift found by a dry-run: reported, previewed, kept by an ignore
	// rule, then reverted.
	edit("configmap-0000", "edited")
	ignore, err := diff.NewIgnorer([]kustomizev1.IgnoreRule{{Paths: []string{"/data/key"}}})
	g.Expect(err).NotTo(HaveOccurred())
	for _, opts := range []Options{{ReportOnly: true}, {Preview: true}, {Ignore: ignore}, {}} {
		apply(opts)
	}
	var drifted int
	edit("configmap-0000", "edited again")
	for _, r := range apply(Options{}) {
		if r.Drift {
			drifted++
		}
	}
	g.Expect(drifted).To(Equal(1), "the test took the dry-run's path")

	g.Expect(objs).To(Equal(prepared), "ApplySet changed a desired object")
}
