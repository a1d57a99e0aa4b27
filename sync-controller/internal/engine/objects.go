package engine

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"plumb.dev/pkg/manage"
)

// ObjectID identifies an object across versions of its kind.
type ObjectID struct {
	Group     string
	Kind      string
	Namespace string
	Name      string
}

// IDOf returns the id of obj.
func IDOf(obj *unstructured.Unstructured) ObjectID {
	gvk := obj.GroupVersionKind()
	return ObjectID{Group: gvk.Group, Kind: gvk.Kind, Namespace: obj.GetNamespace(), Name: obj.GetName()}
}

// String returns <kind>/<namespace>/<name>, or <kind>/<name> when
// cluster-scoped: the form messages and events use (pkg/diff's ObjectID).
func (id ObjectID) String() string {
	if id.Namespace == "" {
		return id.Kind + "/" + id.Name
	}
	return id.Kind + "/" + id.Namespace + "/" + id.Name
}

// key is unique across groups: the engine's memory is keyed by it.
func (id ObjectID) key() string { return id.Group + "/" + id.String() }

// GroupKind returns the id's group and kind.
func (id ObjectID) GroupKind() schema.GroupKind {
	return schema.GroupKind{Group: id.Group, Kind: id.Kind}
}

// Owner names the Kustomization that manages a set of objects.
type Owner = manage.Owner

// OwnerOf returns the owner recorded in obj's labels, if any.
func OwnerOf(labels map[string]string) (Owner, bool) { return manage.OwnerOf(labels) }
