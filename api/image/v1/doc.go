// Package v1 holds the image.plumb.dev/v1 API: ImageRepository (the tags
// of one image in a registry, scanned every interval) and ImagePolicy
// (the latest of those tags by a semver range, an alphabetical or a
// numerical order) and ImageUpdateAutomation (writes the latest images
// of selected ImagePolicies into a GitRepository's manifests, commits and
// pushes them). image-controller reconciles the three.
//
// Field names and their meaning follow Flux's image.toolkit.fluxcd.io/v1
// API (image-reflector-controller and image-automation-controller), so a Flux manifest ports by changing
// its apiVersion; the fields Plumb refuses, and why, are in api/fluxport.
// +kubebuilder:object:generate=true
// +groupName=image.plumb.dev
package v1
