// Package v1 holds the set.plumb.dev/v1 API: ObjectSet, a Go text/template
// of Plumb objects rendered once per element of its generators (lists,
// the folders and files of a GitRepository's artifact, the kubeconfig
// Secrets of clusters, and the matrix or merge of two of those), whose
// objects are created, updated and pruned as elements come and go. It is
// Plumb's answer to Argo CD's ApplicationSet and flux-operator's
// ResourceSet; sync-controller reconciles it.
//
// The template's data per generator follows Argo CD's goTemplate names
// (docs/api/objectset.md lists them).
// +kubebuilder:object:generate=true
// +groupName=set.plumb.dev
package v1
