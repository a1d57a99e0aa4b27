package cmd

import (
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/inspect"
)

// driftDisabledTxt is what diff says of an object whose HelmRelease turned
// drift detection off.
const driftDisabledTxt = "driftDetection disabled"

// applied is an object sync-controller keeps in step with a render — a
// Kustomization or a HelmRelease — as diff, tree and get NAME read it
// (pkg/inspect, shared with the UI), with the CLI's kind of it.
type applied struct {
	*inspect.Applied
	kind *kind
}

// appliedKustomization views a Kustomization.
func appliedKustomization(ks *kustomizev1.Kustomization) *applied {
	return &applied{Applied: inspect.AppliedKustomization(ks), kind: kustomizationKind}
}

// appliedHelmRelease views a HelmRelease.
func appliedHelmRelease(hr *helmv2.HelmRelease) *applied {
	return &applied{Applied: inspect.AppliedHelmRelease(hr), kind: helmReleaseKind}
}

// appliedOf views obj if it is a kind sync-controller applies.
func appliedOf(obj client.Object) (*applied, bool) {
	switch o := obj.(type) {
	case *kustomizev1.Kustomization:
		return appliedKustomization(o), true
	case *helmv2.HelmRelease:
		return appliedHelmRelease(o), true
	}
	return nil, false
}

// policyText words the drift policy for the Sync status line.
func (a *applied) policyText() string {
	if a.kind == helmReleaseKind {
		if a.Policy == "" {
			return driftDisabledTxt
		}
		return "driftDetection " + a.Object.(*helmv2.HelmRelease).GetDriftDetectionMode()
	}
	return "driftPolicy " + string(a.Policy)
}

// chartSourceKey is the kind and key of a HelmChart's source, in its
// namespace; a kind the commands do not know (the CRD allows none) is
// read as a HelmRepository.
func chartSourceKey(chart *sourcev1.HelmChart) (*kind, types.NamespacedName) {
	k := kindOfRef(chart.Spec.SourceRef.Kind)
	if k == nil {
		k = helmRepositoryKind
	}
	return k, types.NamespacedName{Namespace: chart.Namespace, Name: chart.Spec.SourceRef.Name}
}

// sourceURL is a source's spec.url.
func sourceURL(src client.Object) string {
	switch s := src.(type) {
	case *sourcev1.GitRepository:
		return s.Spec.URL
	case *sourcev1.HelmRepository:
		return s.Spec.URL
	case *sourcev1.OCIRepository:
		return s.Spec.URL
	}
	return "-"
}
