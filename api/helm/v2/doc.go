// Package v2 holds the helm.plumb.dev/v2 API: HelmRelease, a Helm chart
// that render-controller renders with its values against the cluster's
// capabilities and sync-controller applies with the same engine as a
// Kustomization (waves, Helm hooks as phases, inventory, prune, drift).
//
// Field names follow Flux's helm.toolkit.fluxcd.io/v2 API, so a Flux
// manifest ports by changing its apiVersion, as long as it uses only the
// fields listed here: a field Plumb does not implement is not in the CRD,
// and the API server refuses a manifest that sets one.
// +kubebuilder:object:generate=true
// +groupName=helm.plumb.dev
package v2
