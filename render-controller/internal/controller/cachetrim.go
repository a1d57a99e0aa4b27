package controller

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	"plumb.dev/pkg/app"
)

// lastAppliedAnnotation is where `kubectl apply` keeps the whole object
// it applied, spec included: as large as the rest of the object, and read
// by kubectl alone.
const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// CacheTrims are the cuts render-controller's cache makes (pkg/app,
// Trim): of every Kustomization it keeps the spec, the metadata but
// kubectl's last-applied annotation, and of the status only what the
// render reads (TrimKustomization); of every ConfigMap's metadata, what
// names it (TrimConfigMapMetadata).
func CacheTrims() []app.Trim {
	return []app.Trim{
		{Object: &kustomizev1.Kustomization{}, Transform: TrimKustomization},
		{Object: &corev1.ConfigMap{}, Transform: TrimConfigMapMetadata},
	}
}

// TrimConfigMapMetadata keeps of a ConfigMap's metadata, as the
// HelmReleases' watch of valuesFrom ConfigMaps caches it (metadata only,
// every ConfigMap of the cluster), its name, namespace, UID and
// resourceVersion. The watch maps an event to the HelmReleases that read
// the ConfigMap by its name alone, and a change of its data is an event
// because it changes the resourceVersion; the labels, annotations, owners
// and finalizers were most of what a fleet's ConfigMaps cost
// render-controller (the managed ConfigMaps of the Kustomizations
// included: docs/bench/fleet.md, "Memory at 5,000"). Nothing reads a
// ConfigMap through the cache: the manager's client reads them from the
// API server (pkg/app). A whole ConfigMap passes unchanged.
func TrimConfigMapMetadata(in any) (any, error) {
	m, ok := in.(*metav1.PartialObjectMetadata)
	if !ok {
		return in, nil
	}
	m.ObjectMeta = metav1.ObjectMeta{
		Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
		Generation: m.Generation, DeletionTimestamp: m.DeletionTimestamp,
	}
	return m, nil
}

// TrimKustomization cuts a Kustomization down to what render-controller
// reads before its cache keeps it. Most of a Kustomization's status is
// sync-controller's — the inventory of every managed object, the other
// conditions, the drift, sync, retry and manual-sync records and the
// applied revisions — and the render reads none of it; a fleet keeps
// every Kustomization in the cache (docs/bench/fleet.md, "Memory at
// 5,000"). What stays of the status:
//
//   - renderedArtifact: the render served, kept by a failure and
//     replaced by a new one (reconcileStore);
//   - the Rendered condition: with the cache key, it ends a reconcile
//     whose render is current (reconcileCache), and it says whether a
//     render is news (rendered.Announce);
//   - the digest of each status.history entry: those renders outlive
//     the retention of the store, for a rollback (historyretention.go).
//
// Every status write of render-controller is a server-side apply of those
// fields alone (ownedStatus), and its finalizer is applied or patched
// apart, so nothing the cut leaves out is ever written back. Another kind
// or an object that is not a Kustomization passes unchanged.
func TrimKustomization(in any) (any, error) {
	ks, ok := in.(*kustomizev1.Kustomization)
	if !ok {
		return in, nil
	}
	delete(ks.Annotations, lastAppliedAnnotation)
	var history meta.History
	for _, h := range ks.Status.History {
		if h.Digest != "" {
			history = append(history, meta.Snapshot{Digest: h.Digest})
		}
	}
	ks.Status = kustomizev1.KustomizationStatus{
		RenderedArtifact: ks.Status.RenderedArtifact,
		Conditions:       ownedConditions(ks),
		History:          history,
	}
	return ks, nil
}
