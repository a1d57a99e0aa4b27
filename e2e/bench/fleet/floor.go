package main

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/e2e/bench/benchkit"
	"plumb.dev/pkg/benchfig"
)

// The floor is what any controller that reports on its Kustomizations
// must cost the API server at the least, with no controller in the loop:
// for each Kustomization of the fleet, its create, one status write (the
// status Plumb ended with, copied) and the 4 applies of its objects. The
// Kustomizations are of a copy of the Kustomization CRD under another
// group (floorGroup) — the same schema, validation rules and so the same
// cost per write — that no controller watches. The floor tells what the
// machine allows apart from what Plumb adds to it: the create and the
// status write are not the bare loop's, and no design writes less.
const (
	floorGroup     = "floor.bench.plumb.dev"
	floorKind      = "FloorKustomization"
	floorPlural    = "floorkustomizations"
	floorNamespace = "floor"
	floorManager   = "bench-floor"
)

var floorGVK = schema.GroupVersionKind{Group: floorGroup, Version: kustomizev1.GroupVersion.Version, Kind: floorKind}

// installFloorCRD creates the copy of the Kustomization CRD and waits
// until it is served.
func (b *bench) installFloorCRD(ctx context.Context) error {
	crdGVK := schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}
	orig := &unstructured.Unstructured{}
	orig.SetGroupVersionKind(crdGVK)
	if err := b.fast.Get(ctx, client.ObjectKey{Name: "kustomizations." + kustomizev1.GroupVersion.Group}, orig); err != nil {
		return fmt.Errorf("reading the Kustomization CRD: %w", err)
	}
	spec, _, _ := unstructured.NestedMap(orig.Object, "spec")
	spec["group"] = floorGroup
	spec["names"] = map[string]any{"kind": floorKind, "listKind": floorKind + "List", "plural": floorPlural, "singular": "floorkustomization"}
	crd := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	crd.SetGroupVersionKind(crdGVK)
	crd.SetName(floorPlural + "." + floorGroup)
	if err := b.fast.Create(ctx, crd); err != nil {
		return fmt.Errorf("creating the floor's CRD: %w", err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(floorGVK.GroupVersion().WithKind(floorKind + "List"))
		err := b.fast.List(ctx, list, client.InNamespace(floorNamespace))
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the floor's CRD is not served: %w", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// runFloor measures the floor of a fleet of n that is Ready: the same
// creates, status writes (each Kustomization's own status) and objects
// (named floor-…), with the bare loop's workers, each doing one
// Kustomization after the other.
func (b *bench) runFloor(ctx context.Context, f *fleetFigures) error {
	n := f.n
	say(">> N=%d: the floor: %d creates and status writes of a Kustomization CRD copy no controller watches, and %d objects", n, n, 4*n)
	if err := b.ensureNamespaces(ctx, []string{floorNamespace}); err != nil {
		return err
	}
	if err := b.installFloorCRD(ctx); err != nil {
		return err
	}
	statuses := make([]map[string]any, n)
	specs := make([]map[string]any, n)
	for i := range n {
		ks := &unstructured.Unstructured{}
		ks.SetGroupVersionKind(kustomizev1.GroupVersion.WithKind(kustomizev1.KustomizationKind))
		if err := b.fast.Get(ctx, client.ObjectKey{Namespace: fleetNamespace, Name: appName(i)}, ks); err != nil {
			return err
		}
		statuses[i], _, _ = unstructured.NestedMap(ks.Object, "status")
		specs[i], _, _ = unstructured.NestedMap(ks.Object, "spec")
	}
	time.Sleep(2 * time.Second)
	// Profiled beside the fleet's sync, for what the fleet's API server
	// does beyond the floor's: the floor is shorter than the fleet, so its
	// profile lasts half as long, within it.
	defer b.startProfiles(ctx, n, "floor-", max(5, b.c.profileSeconds/2))()
	before, err := b.meter.Snapshot(ctx)
	if err != nil {
		return err
	}
	// When each status write and each Kustomization's last apply
	// returned: the floor's distribution beside the fleet's (tail.go).
	statusAt, doneAt := make([]time.Duration, n), make([]time.Duration, n)
	start := time.Now()
	err = benchkit.ForEach(ctx, n, b.c.workers, func(i int) error {
		obj := &unstructured.Unstructured{Object: map[string]any{"spec": specs[i]}}
		obj.SetGroupVersionKind(floorGVK)
		obj.SetNamespace(floorNamespace)
		obj.SetName(appName(i))
		if err := b.fast.Create(ctx, obj); err != nil {
			return fmt.Errorf("creating %s: %w", appName(i), err)
		}
		st := &unstructured.Unstructured{Object: map[string]any{"status": statuses[i]}}
		st.SetGroupVersionKind(floorGVK)
		st.SetNamespace(floorNamespace)
		st.SetName(appName(i))
		if err := b.fast.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(st), client.FieldOwner(floorManager), client.ForceOwnership); err != nil {
			return fmt.Errorf("the status of %s: %w", appName(i), err)
		}
		statusAt[i] = time.Since(start)
		for _, o := range appObjects(appName(i), "floor-") {
			if err := b.fast.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), client.FieldOwner(floorManager), client.ForceOwnership); err != nil {
				return fmt.Errorf("%s %s/%s: %w", o.GetKind(), o.GetNamespace(), o.GetName(), err)
			}
		}
		doneAt[i] = time.Since(start)
		return nil
	})
	if err != nil {
		return fmt.Errorf("the floor: %w", err)
	}
	f.floor = time.Since(start)
	after, err := b.meter.Snapshot(ctx)
	if err != nil {
		return err
	}
	f.floorDelta = benchkit.Diff(before, after)
	if f.tail != nil {
		f.tail.floorStatus, f.tail.floorDone = statusAt, doneAt
	}
	say("   the floor: %s, %.0f API requests", benchfig.Round(f.floor), f.floorDelta.ResourceRequests())
	return nil
}
