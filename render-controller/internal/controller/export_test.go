package controller

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Builds returns how many builds ran for the Kustomization.
func (r *KustomizationReconciler) Builds(key types.NamespacedName) int64 {
	return r.count(key).renders.Load()
}

// Reconciles returns how many reconciles ran for the Kustomization.
func (r *KustomizationReconciler) Reconciles(key types.NamespacedName) int64 {
	return r.count(key).reconciles.Load()
}

// Renders returns how many renders ran for the HelmRelease.
func (r *HelmReleaseReconciler) Renders(key types.NamespacedName) int64 {
	return r.count(key).renders.Load()
}

// setClock replaces time.Now (tests).
func (h *limitHolds) setClock(now func() time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.now = now
}

// setUpWithoutManager builds r as SetupWithManager does, for a test that
// calls its Reconcile directly with no manager running it. What r made of
// its own for want of a Renderer or SourceTrees is closed when t ends.
func setUpWithoutManager(t *testing.T, r reconcile.Reconciler) {
	t.Helper()
	switch r := r.(type) {
	case *KustomizationReconciler:
		if err := r.setUp(); err != nil {
			t.Fatal(err)
		}
		if r.SourceTrees == nil {
			t.Cleanup(func() { _ = r.trees.Close() })
		}
		if r.Renderer == nil {
			t.Cleanup(r.pool.Close)
		}
	case *HelmReleaseReconciler:
		r.setUp()
		if r.Renderer == nil {
			t.Cleanup(r.pool.Close)
		}
	default:
		t.Fatalf("%T is not one of render-controller's reconcilers", r)
	}
}
