package inventory

import (
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/object"
)

// EntryOf returns the inventory entry of obj.
func EntryOf(obj *unstructured.Unstructured) kustomizev1.InventoryEntry {
	gvk := obj.GroupVersionKind()
	return kustomizev1.InventoryEntry{
		Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind,
		Namespace: obj.GetNamespace(), Name: obj.GetName(),
	}
}

// New returns the inventory of objs, sorted.
func New(objs []*unstructured.Unstructured) *kustomizev1.Inventory {
	entries := make([]kustomizev1.InventoryEntry, 0, len(objs))
	for _, o := range objs {
		entries = append(entries, EntryOf(o))
	}
	sort.Slice(entries, func(i, j int) bool { return less(entries[i], entries[j]) })
	return &kustomizev1.Inventory{Entries: entries}
}

// Object returns a stub object (kind, namespace, name) for an entry.
func Object(e kustomizev1.InventoryEntry) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(schema.GroupVersionKind{Group: e.Group, Version: e.Version, Kind: e.Kind})
	obj.SetNamespace(e.Namespace)
	obj.SetName(e.Name)
	return obj
}

// Removed returns stubs of the entries of old that objs no longer holds.
// The version does not matter: an object that moved to another version of
// its kind is the same object.
func Removed(old *kustomizev1.Inventory, objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	if old == nil {
		return nil
	}
	kept := make(map[object.ID]bool, len(objs))
	for _, o := range objs {
		kept[object.IDOf(o)] = true
	}
	var removed []*unstructured.Unstructured
	for _, e := range old.Entries {
		if !kept[IDOf(e)] {
			removed = append(removed, Object(e))
		}
	}
	return removed
}

// Objects returns stubs of every entry.
func Objects(inv *kustomizev1.Inventory) []*unstructured.Unstructured {
	if inv == nil {
		return nil
	}
	out := make([]*unstructured.Unstructured, 0, len(inv.Entries))
	for _, e := range inv.Entries {
		out = append(out, Object(e))
	}
	return out
}

// IDOf returns the identity of the object an entry names.
func IDOf(e kustomizev1.InventoryEntry) object.ID {
	return object.ID{Group: e.Group, Kind: e.Kind, Namespace: e.Namespace, Name: e.Name}
}

func less(a, b kustomizev1.InventoryEntry) bool {
	if a.Group != b.Group {
		return a.Group < b.Group
	}
	if a.Kind != b.Kind {
		return a.Kind < b.Kind
	}
	if a.Namespace != b.Namespace {
		return a.Namespace < b.Namespace
	}
	return a.Name < b.Name
}
