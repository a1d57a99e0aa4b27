// Package v1 holds the kustomize.plumb.dev/v1 API: Kustomization, which
// render-controller renders into a manifests artifact and sync-controller
// applies to the cluster.
//
// Two controllers write one Kustomization's status, each with its own field
// manager and its own fields: render-controller owns status.renderedArtifact
// and the Rendered condition; sync-controller owns everything else.
//
// Field names follow Flux's kustomize.toolkit.fluxcd.io/v1 API, so a Flux
// manifest ports by changing its apiVersion. Plumb's own additions
// (driftPolicy, ignore, sync waves and hooks) are new fields.
// +kubebuilder:object:generate=true
// +groupName=kustomize.plumb.dev
package v1
