package engine

import (
	"bytes"
	"slices"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"plumb.dev/pkg/diff"
)

// foreignOwners returns, sorted, the field managers other than plumb-sync
// whose managedFields entries own at least one of the changed fields: who
// made the drift. Status writes are left out (they change nothing Git
// declares); a scale subresource write (an autoscaler's) counts. A change
// that removed a field leaves no owner behind and names nobody.
func foreignOwners(entries []metav1.ManagedFieldsEntry, changes []diff.Change) []string {
	var out []string
	for _, e := range entries {
		if e.Manager == FieldManager || e.Subresource == "status" || e.FieldsV1 == nil || slices.Contains(out, e.Manager) {
			continue
		}
		set := &fieldpath.Set{}
		if err := set.FromJSON(bytes.NewReader(e.FieldsV1.Raw)); err != nil {
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
	for _, name := range fieldNames(path) {
		p = append(p, fieldpath.PathElement{FieldName: &name})
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

// fieldNames splits a pkg/diff path into its leading field names and map
// keys, up to the first list index.
func fieldNames(path string) []string {
	var names []string
	for path != "" {
		switch {
		case strings.HasPrefix(path, "."):
			path = path[1:]
		case strings.HasPrefix(path, `["`):
			q, err := strconv.QuotedPrefix(path[1:])
			if err != nil {
				return names
			}
			key, _ := strconv.Unquote(q)
			names = append(names, key)
			path = strings.TrimPrefix(path[1+len(q):], "]")
		case strings.HasPrefix(path, "["):
			return names // a list index
		default:
			end := strings.IndexAny(path, ".[")
			if end < 0 {
				end = len(path)
			}
			names = append(names, path[:end])
			path = path[end:]
		}
	}
	return names
}
