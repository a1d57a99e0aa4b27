package main

import (
	"context"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	"plumb.dev/pkg/benchfig"
	"plumb.dev/pkg/inventory"
	"plumb.dev/pkg/reconcile"
)

// statusProbe times, with the bench's own client and no controller
// running, the server-side apply of a Kustomization status like the one
// sync-controller writes at the end of every run (conditions, revision,
// lastHandledReconcileAt, inventory), with the workload's inventory, with an
// empty one, and without one while another field manager keeps the
// workload's inventory stored: what a no-op resync's single request costs
// the API server, and whether the inventory's cost follows what is sent or
// what is stored.
func (b *bench) statusProbe(ctx context.Context, w workload, runs int) (withInventory, empty, storedNotSent time.Duration, err error) {
	ns, err := b.env.Namespace(ctx, "bench-status")
	if err != nil {
		return 0, 0, 0, err
	}
	ks := newKustomization(ns)
	// Suspended: the in-process controller, started later, leaves it be.
	ks.Spec.Suspend = true
	if err := b.wc.Create(ctx, ks); err != nil {
		return 0, 0, 0, err
	}
	objs, err := decode(manifests(w, ns, b.c.objects))
	if err != nil {
		return 0, 0, 0, err
	}
	inv := inventory.New(objs)
	timeApplies := func(manager string, inv *kustomizev1.Inventory) (time.Duration, error) {
		var ds []time.Duration
		for i := range runs + 1 {
			st := kustomizev1.KustomizationStatus{ObservedGeneration: 1, LastAppliedRevision: "main@sha1:probe", Inventory: inv}
			st.LastHandledReconcileAt = time.Now().UTC().Format(time.RFC3339Nano)
			holder := &kustomizev1.Kustomization{Status: st}
			conditions.MarkTrue(holder, meta.ReadyCondition, meta.SucceededReason, "Applied revision: main@sha1:probe")
			status, err := reconcile.ToStatusMap(&holder.Status)
			if err != nil {
				return 0, err
			}
			start := time.Now()
			if err := reconcile.ApplyStatus(ctx, b.wc, ks, manager, status); err != nil {
				return 0, err
			}
			if i > 0 { // the first apply creates the fields; later ones are like a resync's
				ds = append(ds, time.Since(start))
			}
		}
		return benchfig.Percentile(ds, 50), nil
	}
	if withInventory, err = timeApplies("bench-status-probe", inv); err != nil {
		return 0, 0, 0, err
	}
	if empty, err = timeApplies("bench-status-probe", &kustomizev1.Inventory{Entries: []kustomizev1.InventoryEntry{}}); err != nil {
		return 0, 0, 0, err
	}
	// The inventory stored but owned by another field manager, and the
	// status applies not sending it: does the cost follow what is sent or
	// what is stored?
	if _, err := timeApplies("bench-status-inventory", inv); err != nil {
		return 0, 0, 0, err
	}
	if storedNotSent, err = timeApplies("bench-status-probe-2", nil); err != nil {
		return 0, 0, 0, err
	}
	return withInventory, empty, storedNotSent, nil
}
