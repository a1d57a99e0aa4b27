// Package v1beta1 holds the source.extensions.plumb.dev/v1beta1 API:
// ArtifactGenerator, which source-controller turns into ExternalArtifacts
// composed of files copied from other sources' artifacts.
//
// Field names and meanings follow Flux's source.extensions.fluxcd.io/v1beta1
// ArtifactGenerator (Flux 2.7, served there by source-watcher), so a Flux
// manifest ports by changing its apiVersion. Of Flux's fields, those no
// Plumb controller reads yet (pathPattern, commonMetadata, the Extract
// strategy) are left out rather than accepted and ignored.
// +kubebuilder:object:generate=true
// +groupName=source.extensions.plumb.dev
package v1beta1
