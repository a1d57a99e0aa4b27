package object

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ID identifies an object in a cluster across the versions of its kind.
type ID struct {
	Group     string
	Kind      string
	Namespace string
	Name      string
}

// IDOf returns the id of obj.
func IDOf(obj *unstructured.Unstructured) ID {
	gvk := obj.GroupVersionKind()
	return ID{Group: gvk.Group, Kind: gvk.Kind, Namespace: obj.GetNamespace(), Name: obj.GetName()}
}

// String returns <kind>/<namespace>/<name>, or <kind>/<name> when the id
// has no namespace: the form of messages, events and status.
func (id ID) String() string {
	if id.Namespace == "" {
		return id.Kind + "/" + id.Name
	}
	return id.Kind + "/" + id.Namespace + "/" + id.Name
}

// GroupKind returns the id's group and kind.
func (id ID) GroupKind() schema.GroupKind {
	return schema.GroupKind{Group: id.Group, Kind: id.Kind}
}

// Stub returns an object that holds only its identity and version: what a
// read, a health check or a delete of the object needs to name it.
func Stub(apiVersion, kind, namespace, name string) *unstructured.Unstructured {
	o := &unstructured.Unstructured{}
	o.SetAPIVersion(apiVersion)
	o.SetKind(kind)
	o.SetNamespace(namespace)
	o.SetName(name)
	return o
}
