package manage

import (
	"fmt"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/diff"
)

// FieldManager is the field manager of every write sync-controller makes to
// managed objects.
const FieldManager = "plumb-sync"

// AppliedHashAnnotation holds the hash of the desired object last applied.
const AppliedHashAnnotation = "plumb.dev/applied-hash"

// Owner names the Kustomization that manages an object.
type Owner struct {
	Namespace string
	Name      string
}

// OwnerOf returns the owner recorded in an object's labels, if any.
func OwnerOf(labels map[string]string) (Owner, bool) {
	name, ok := labels[kustomizev1.NameLabel]
	if !ok {
		return Owner{}, false
	}
	return Owner{Namespace: labels[kustomizev1.NamespaceLabel], Name: name}, true
}

// Stamp adds the owner's labels to obj and returns the hash of the result,
// which it also records in the applied-hash annotation. The hash leaves the
// annotation itself out, so stamping twice gives the same hash.
func Stamp(obj *unstructured.Unstructured, owner Owner) (string, error) {
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[kustomizev1.NameLabel] = owner.Name
	labels[kustomizev1.NamespaceLabel] = owner.Namespace
	obj.SetLabels(labels)

	annotations := obj.GetAnnotations()
	delete(annotations, AppliedHashAnnotation)
	obj.SetAnnotations(annotations)
	hash, err := diff.Hash(obj)
	if err != nil {
		return "", err
	}
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[AppliedHashAnnotation] = hash
	obj.SetAnnotations(annotations)
	return hash, nil
}

// Resolve checks that obj's kind is served, fills in its version when it
// names none (the preferred one), and gives it defaultNamespace when it is
// namespaced and has none, or no namespace when it is cluster-scoped. An
// unserved kind is an error wrapping the mapper's NoKindMatch error.
func Resolve(mapper apimeta.RESTMapper, obj *unstructured.Unstructured, defaultNamespace string) error {
	gvk := obj.GroupVersionKind()
	var versions []string
	if gvk.Version != "" {
		versions = []string{gvk.Version}
	}
	mapping, err := mapper.RESTMapping(gvk.GroupKind(), versions...)
	if err != nil {
		if apimeta.IsNoMatchError(err) {
			return fmt.Errorf("%s %s: the kind %s is not served by the API server (is its CRD installed?): %w",
				gvk.Kind, obj.GetName(), gvk.GroupVersion().WithKind(gvk.Kind), err)
		}
		return err
	}
	obj.SetGroupVersionKind(mapping.GroupVersionKind)
	if mapping.Scope.Name() != apimeta.RESTScopeNameNamespace {
		obj.SetNamespace("")
	} else if obj.GetNamespace() == "" {
		obj.SetNamespace(defaultNamespace)
	}
	return nil
}
