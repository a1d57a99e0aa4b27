package controller

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	"plumb.dev/pkg/kinds"
	"plumb.dev/pkg/reconcile"
)

// ControllerName names sync-controller in events and as its status field manager.
const ControllerName = kinds.SyncController

// Finalizer lets sync-controller prune a deleted Kustomization's objects.
const Finalizer = kustomizev1.SyncFinalizer

// dependsOnIndex indexes Kustomizations by the ones they depend on.
const dependsOnIndex = ".spec.dependsOn"

// KustomizationReconciler makes the cluster equal to a Kustomization's
// rendered manifests.
type KustomizationReconciler struct {
	Syncer

	// sk is built once, by SetupWithManager.
	sk *reconcile.Controller[*kustomizev1.Kustomization]
}

// SetupWithManager registers the reconciler: it runs on spec changes, reconcile
// requests, a new rendered artifact, a dependency becoming Ready, and foreign
// writes to managed objects (through the engine's watcher).
func (r *KustomizationReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, concurrency int) error {
	r.defaults()
	r.sk = r.newSkeleton()
	if err := mgr.GetFieldIndexer().IndexField(ctx, &kustomizev1.Kustomization{}, dependsOnIndex, func(o client.Object) []string {
		return dependsOnKeys(o, o.(*kustomizev1.Kustomization).Spec.DependsOn)
	}); err != nil {
		return err
	}
	if err := r.stopRemotesWith(mgr); err != nil {
		return err
	}
	if err := r.watchOwnWrites(ctx, mgr, &kustomizev1.Kustomization{}); err != nil {
		return err
	}
	if err := addStartupWatches(mgr, &r.Syncer, kustomizev1.KustomizationKind, &kustomizev1.KustomizationList{}); err != nil {
		return err
	}
	b := ctrl.NewControllerManagedBy(mgr).
		For(&kustomizev1.Kustomization{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, reconcile.RequestedPredicate{}, renderedChanged{ownWrite: r.Renders.ownWrite},
			ConfirmPruneChanged{}, rollbackChanged{}, forceDeleteRequested{}, syncRequested{})))
	if r.Renders != nil {
		// Each render read from render-controller's feed.
		b = b.WatchesRawSource(r.Renders.Source())
	}
	return b.
		Watches(&kustomizev1.Kustomization{}, handler.EnqueueRequestsFromMapFunc(r.dependents),
			builder.WithPredicates(becameReady{})).
		Watches(&kustomizev1.SyncWindowPolicy{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []ctrl.Request {
			return r.windowPolicySelects(ctx, o, &kustomizev1.KustomizationList{})
		})).
		WatchesRawSource(r.Engine.Watcher().Source()).
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrency}).
		Complete(r)
}

// newSkeleton is this controller's use of pkg/reconcile, shared by every
// run: a failure is retried after spec.retryInterval. Each run copies it
// and sets its own status writer, which writes only what changed since
// the run's last write.
func (r *KustomizationReconciler) newSkeleton() *reconcile.Controller[*kustomizev1.Kustomization] {
	return newSkeleton(&r.Syncer, kustomizev1.KustomizationKind, func(ks *kustomizev1.Kustomization) string {
		return appliedMessage(ks.Status.LastAppliedRevision, ks.Status.ManualSyncStatus) + rolledBackNote(ks) + windowNote(ks.Status.SyncWindow, appOf(ks).spec())
	})
}

// Reconcile runs one sync of a Kustomization (syncRun.steps), records the
// sync operation it made in status.history (recordSync) and writes
// sync-controller's part of its status.
func (r *KustomizationReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return reconcileObject(ctx, &r.Syncer, req, &kustomizev1.Kustomization{}, r.sk, recordSync)
}

// dependents maps a Kustomization to the ones that depend on it.
func (r *KustomizationReconciler) dependents(ctx context.Context, o client.Object) []ctrl.Request {
	return r.dependentsOf(ctx, o, &kustomizev1.KustomizationList{})
}

func digestOf(a *meta.Artifact) string {
	if a == nil {
		return ""
	}
	return a.Digest
}
