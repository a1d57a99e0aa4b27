// Package v1 holds the source.plumb.dev/v1 API: GitRepository, which
// source-controller turns into a tar.gz artifact served over HTTP;
// HelmRepository, whose index it fetches and serves; and HelmChart, a chart
// it fetches from either and serves packaged as a .tgz artifact.
//
// Field names follow Flux's source.toolkit.fluxcd.io/v1 API, so a Flux
// manifest ports by changing its apiVersion.
// +kubebuilder:object:generate=true
// +groupName=source.plumb.dev
package v1
