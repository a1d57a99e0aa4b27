package v1

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Inventory is the set of objects a Kustomization (or a HelmRelease)
// applied. It is the one status field that grows with the set, an entry
// per object, and nothing bounds it but the API server's limit on an
// object's size (etcd's 1.5 MiB): in Flux's shape an entry takes about 40
// bytes plus its names, some 20,000 objects of usual names.
type Inventory struct {
	// Entries are the objects, sorted by group, kind, namespace and name.
	// +listType=atomic
	Entries []InventoryEntry `json:"entries"`
}

// InventoryEntry identifies one applied object. In Go it has the object's
// group, version, kind, namespace and name; in JSON it is Flux's inventory
// entry, {"id": "<namespace>_<name>_<group>_<kind>", "v": "<version>"}
// (ID), because the tools that read a Flux Kustomization's inventory (flux
// tree, flux diff kustomization, Flux's web UIs) split the id by that
// format and fail on an entry without one. It is the smaller shape too,
// and the inventory is the status's one large field. An entry stored in
// Plumb's earlier shape ({group, version, kind, namespace, name}) is still
// read, so that an upgraded sync-controller prunes what the old one
// applied; the next sync writes it again in Flux's shape.
//
// The CRD cannot describe a shape the Go fields do not have, so it keeps
// the entry as it is written; only sync-controller writes it. Clients
// speak JSON to the API server (client-go's CBOR is alpha and off); one
// that turned CBOR on would need MarshalCBOR and UnmarshalCBOR here too,
// as metav1.Time has.
// +kubebuilder:validation:Type=object
// +kubebuilder:pruning:PreserveUnknownFields
type InventoryEntry struct {
	Group     string `json:"-"`
	Version   string `json:"-"`
	Kind      string `json:"-"`
	Namespace string `json:"-"`
	Name      string `json:"-"`

	// EarlierShape is set on an entry read in Plumb's earlier shape, and
	// never written: it keeps the entry from equalling the same entry made
	// afresh (semantic equality, which sync-controller's status writer
	// compares with, refuses unexported fields), so the writer rewrites the
	// inventory in Flux's shape.
	EarlierShape bool `json:"-"`
}

// rbacGroup is the group of the kinds whose names Flux's id writes with a
// colon as two underscores (Role, ClusterRole and their bindings: the only
// ones whose names hold colons, like system:auth-delegator).
const rbacGroup = "rbac.authorization.k8s.io"

// ID returns the entry's id in Flux's format,
// <namespace>_<name>_<group>_<kind>: empty namespace for a cluster-scoped
// object and empty group for the core group, and in the name of an RBAC
// object a colon written as "__". No namespace, group or kind holds an
// underscore, so the id splits back (ParseInventoryID).
func (e InventoryEntry) ID() string {
	name := e.Name
	if e.Group == rbacGroup {
		name = strings.ReplaceAll(name, ":", "__")
	}
	return e.Namespace + "_" + name + "_" + e.Group + "_" + e.Kind
}

// ParseInventoryID returns the entry an id (ID) and a version name, split
// as Flux splits it: the namespace before the first underscore, the kind
// after the last, the group before that, and the name in between with
// "__" read as a colon. (A name holding "__" itself is read wrong, as
// Flux reads it; Kubernetes names rarely hold an underscore at all.)
func ParseInventoryID(id, version string) (InventoryEntry, error) {
	ns, rest, ok := strings.Cut(id, "_")
	i := strings.LastIndex(rest, "_")
	if !ok || i < 0 {
		return InventoryEntry{}, fmt.Errorf("inventory id %q is not <namespace>_<name>_<group>_<kind>", id)
	}
	kind, rest := rest[i+1:], rest[:i]
	i = strings.LastIndex(rest, "_")
	if i < 0 || kind == "" {
		return InventoryEntry{}, fmt.Errorf("inventory id %q is not <namespace>_<name>_<group>_<kind>", id)
	}
	return InventoryEntry{
		Group: rest[i+1:], Version: version, Kind: kind, Namespace: ns,
		Name: strings.ReplaceAll(rest[:i], "__", ":"),
	}, nil
}

// fluxEntry is an entry's JSON, Flux's ResourceRef.
type fluxEntry struct {
	ID      string `json:"id"`
	Version string `json:"v"`
}

// MarshalJSON writes the entry in Flux's shape.
func (e InventoryEntry) MarshalJSON() ([]byte, error) {
	return json.Marshal(fluxEntry{ID: e.ID(), Version: e.Version})
}

// UnmarshalJSON reads an entry in Flux's shape, or in Plumb's earlier one.
func (e *InventoryEntry) UnmarshalJSON(data []byte) error {
	var in struct {
		fluxEntry
		Group     string `json:"group"`
		Version   string `json:"version"`
		Kind      string `json:"kind"`
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
	}
	if err := json.Unmarshal(data, &in); err != nil {
		return err
	}
	switch {
	case in.ID != "":
		entry, err := ParseInventoryID(in.ID, in.fluxEntry.Version)
		if err != nil {
			return err
		}
		*e = entry
	case in.Kind != "" && in.Name != "":
		*e = InventoryEntry{Group: in.Group, Version: in.Version, Kind: in.Kind,
			Namespace: in.Namespace, Name: in.Name, EarlierShape: true}
	default:
		return errors.New("inventory entry has neither an id nor a kind and name")
	}
	return nil
}
