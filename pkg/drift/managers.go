package drift

import (
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"plumb.dev/pkg/diff"
	"plumb.dev/pkg/manage"
)

// ForeignManagers is who, besides plumb-sync, owns which fields of a live
// object, as its metadata.managedFields say: the answer to "who changed
// it" for a drifted field. Status writes are left out (they change nothing
// Git declares); a scale subresource write (an autoscaler's) counts. A
// field that a foreign write removed leaves no owner behind and names
// nobody.
type ForeignManagers struct {
	owners []fieldOwner
}

type fieldOwner struct {
	manager string
	time    time.Time
	fields  *fieldpath.Set
}

// ForeignManagersOf parses the managedFields entries of a live object once,
// for any number of lookups. An entry whose field set cannot be parsed is
// skipped: a name the API server wrote wrong is no reason to report none.
func ForeignManagersOf(entries []metav1.ManagedFieldsEntry) ForeignManagers {
	var m ForeignManagers
	for _, e := range entries {
		if e.Manager == manage.FieldManager || e.Subresource == "status" || e.FieldsV1 == nil {
			continue
		}
		set := &fieldpath.Set{}
		if err := set.FromJSON(e.FieldsV1.GetRawReader()); err != nil {
			continue
		}
		o := fieldOwner{manager: e.Manager, fields: set}
		if e.Time != nil {
			o.time = e.Time.Time
		}
		m.owners = append(m.owners, o)
	}
	return m
}

// ManagerOf names the foreign field manager that owns the field at path
// (pkg/diff's rendering, e.g. spec.template.spec.containers[0].image) of
// live, or "" when none does. It is what the UI shows beside a drifted
// field; sync-controller puts the same on its drift events.
func ManagerOf(live *unstructured.Unstructured, path string) string {
	if live == nil {
		return ""
	}
	return ForeignManagersOf(live.GetManagedFields()).Of(path)
}

// Of names the manager owning the field at path, or "". When several do
// (two appliers that set the same value), the one that wrote last is
// named, and of equally recent ones the first by name, so the answer does
// not depend on the order of the entries.
func (m ForeignManagers) Of(path string) string {
	best := -1
	for i, o := range m.owners {
		if !owns(o.fields, path) {
			continue
		}
		if best < 0 || o.time.After(m.owners[best].time) ||
			(o.time.Equal(m.owners[best].time) && o.manager < m.owners[best].manager) {
			best = i
		}
	}
	if best < 0 {
		return ""
	}
	return m.owners[best].manager
}

// Owning returns, sorted and once each, the managers that own at least one
// of the changed fields: who made the drift.
func (m ForeignManagers) Owning(changes []diff.Change) []string {
	var out []string
	for _, o := range m.owners {
		if slices.Contains(out, o.manager) {
			continue
		}
		for _, c := range changes {
			if owns(o.fields, c.Path) {
				out = append(out, o.manager)
				break
			}
		}
	}
	slices.Sort(out)
	return out
}

// owns reports whether the field set holds the field at path or anything
// under it. The path is followed as far as it names fields and map keys;
// at a list index it stops, and owning anything in the list counts
// (managedFields key list items by their merge key, which a diff path
// does not carry).
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
