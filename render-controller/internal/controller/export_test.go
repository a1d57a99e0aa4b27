package controller

import (
	"time"

	"k8s.io/apimachinery/pkg/types"
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
