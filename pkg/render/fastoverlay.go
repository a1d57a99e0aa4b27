package render

import (
	nsfilter "sigs.k8s.io/kustomize/api/filters/namespace"
	"sigs.k8s.io/kustomize/api/resource"
	kustypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/resid"
)

// The overlay's transformers on the fast path (docs/design/render-fast-path.md,
// "The overlay"): what krusty's overlay does to the objects its base gave,
// done with kustomize's own filters on the objects the fast path parsed,
// without krusty's resource map, whose id checks compare every object with
// every other.

// namespaceFieldSpecs are kustomize's default field specs for its
// namespace transformer (the "namespace" section of its default
// configuration, which krusty gives the transformer of an overlay with a
// namespace). kustomize keeps them in an internal package, so they are
// written here; TestNamespaceFieldSpecsAreKustomizes fails if a kustomize
// upgrade changes them. metadata.namespace is not among them: the filter
// sets it itself on every kind its schema says is namespaced.
var namespaceFieldSpecs = kustypes.FsSlice{
	{Gvk: resid.Gvk{Kind: "Namespace"}, Path: "metadata/name", CreateIfNotPresent: true},
	{Gvk: resid.Gvk{Group: "apiregistration.k8s.io", Kind: "APIService"}, Path: "spec/service/namespace", CreateIfNotPresent: true},
	{Gvk: resid.Gvk{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}, Path: "spec/conversion/webhook/clientConfig/service/namespace"},
}

// setNamespace does what kustomize's NamespaceTransformer does to all
// (each of kind kinds[i]) for an overlay's namespace: it records each
// object's previous id (a build annotation krusty removes at the end, as
// the fast path does) and runs kustomize's namespace filter with the
// configuration krusty gives it — the default field specs, RoleBinding
// subjects named "default" — which sets metadata.namespace on a namespaced
// kind and renames a Namespace to the target. It returns false, for
// kustomize to run, on any error and on an id conflict the change makes
// (two objects that now have one id: kustomize refuses the build).
//
// kustomize checks the conflict after each object against all the others
// (a map lookup here): a conflict it finds part-way is also one between
// the final ids, since every namespaced object ends in the one namespace
// and every Namespace under the one name, and the other way round.
//
// The filter asks kustomize's process-wide schema whether a kind is
// cluster-scoped, which a concurrent build with an openapi field may have
// changed; the result is checked against the default schema's scope
// (fastKinds) and the fast path gives up where they differ.
func setNamespace(all []*resource.Resource, kinds []fastKind, namespace string) bool {
	filter := nsfilter.Filter{Namespace: namespace, FsSlice: namespaceFieldSpecs, SetRoleBindingSubjects: nsfilter.DefaultSubjectsOnly}
	seen := make(map[idKey]bool, len(all))
	for i, r := range all {
		if r.IsNilOrEmpty() {
			return false
		}
		before := r.GetNamespace()
		r.StorePreviousId()
		if err := r.ApplyFilter(filter); err != nil || r.IsNilOrEmpty() {
			return false
		}
		want := namespace
		if kinds[i].clusterScoped {
			want = before
		}
		if r.GetNamespace() != want {
			return false
		}
		k := fastID(r, kinds[i])
		if seen[k] {
			return false
		}
		seen[k] = true
	}
	return true
}
