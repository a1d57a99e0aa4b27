package inspect

import (
	"strings"

	kustomizev1 "plumb.dev/api/kustomize/v1"
)

// ObjectDrift is what status.drift says about one managed object.
type ObjectDrift struct {
	// Paths are the drifted fields, as paths like spec.replicas.
	Paths []string `json:"paths,omitempty"`
	// Contested is the fight over its fields, if any.
	Contested *kustomizev1.ContestedDrift `json:"contested,omitempty"`
}

// DriftByObject indexes status.drift by object (pkg/object's ID String
// form, Kind/namespace/name): the drifted paths (status.drift.paths holds
// <object>:<path>) and the fight, if any.
func DriftByObject(d *kustomizev1.DriftStatus) map[string]*ObjectDrift {
	out := map[string]*ObjectDrift{}
	if d == nil {
		return out
	}
	at := func(id string) *ObjectDrift {
		if out[id] == nil {
			out[id] = &ObjectDrift{}
		}
		return out[id]
	}
	for _, p := range d.Paths {
		id, path, ok := strings.Cut(p, ":")
		if !ok {
			continue
		}
		at(id).Paths = append(at(id).Paths, path)
	}
	for i := range d.Contested {
		at(d.Contested[i].Object).Contested = &d.Contested[i]
	}
	return out
}
