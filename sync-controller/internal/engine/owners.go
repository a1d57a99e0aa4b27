package engine

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"plumb.dev/pkg/diff"
	"plumb.dev/pkg/manage"
)

// foreignOwners returns, sorted, the field managers other than plumb-sync
// whose managedFields entries own at least one of the changed fields: who
// made the drift. Status writes are left out (they change nothing Git
// declares); a scale subresource write (an autoscaler's) counts. A change
// that removed a field leaves no owner behind and names nobody.
func foreignOwners(entries []metav1.ManagedFieldsEntry, changes []diff.Change) []string {
	var out []string
	for _, e := range entries {
		if e.Manager == manage.FieldManager || e.Subresource == "status" || e.FieldsV1 == nil || slices.Contains(out, e.Manager) {
			continue
		}
		set := &fieldpath.Set{}
		if err := set.FromJSON(e.FieldsV1.GetRawReader()); err != nil {
			continue
		}
		for _, c := range changes {
			if owns(set, c.Path) {
				out = append(out, e.Manager)
				break
			}
		}
	}
	slices.Sort(out)
	return out
}

// owns reports whether the field set holds the field at path (pkg/diff's
// rendering, e.g. spec.template.spec.containers[0].image) or anything under
// it. The path is followed as far as it names fields and map keys; at a
// list index it stops, and owning anything in the list counts.
func owns(set *fieldpath.Set, path string) bool {
	var p fieldpath.Path
	for _, e := range diff.ParsePath(path) {
		if e.IsIndex {
			break
		}
		p = append(p, fieldpath.PathElement{FieldName: &e.Key})
	}
	if len(p) == 0 {
		return false
	}
	if set.Has(p) {
		return true
	}
	for _, pe := range p {
		set = set.WithPrefix(pe)
	}
	return !set.Empty()
}
