package imageupdate

import (
	"maps"
	"slices"
	"strings"
)

// ImageRef is what an ImagePolicy chose (its status.latestRef): the bare
// image name, its tag and, with digest reflection, its digest.
type ImageRef struct {
	Name, Tag, Digest string
}

// String is the full reference a marker without a suffix receives:
// name:tag, and name:tag@digest when the digest is known, as Flux writes
// it.
func (r ImageRef) String() string {
	s := r.Name + ":" + r.Tag
	if r.Digest != "" {
		s += "@" + r.Digest
	}
	return s
}

// Change is one marked field whose value changed. Setter is the marker's
// name ("ns:name", or with a ":tag", ":name" or ":digest" suffix).
type Change struct {
	OldValue, NewValue, Setter string
}

// ObjectIdentifier names the object a change is in. A document without
// apiVersion, kind or name (a kustomization.yaml may have none) leaves
// those empty.
type ObjectIdentifier struct {
	APIVersion, Kind, Namespace, Name string
}

// String is "Kind namespace/name", or as much of it as the object has.
func (o ObjectIdentifier) String() string {
	n := o.Name
	if o.Namespace != "" {
		n = o.Namespace + "/" + n
	}
	return strings.TrimSpace(o.Kind + " " + n)
}

// ObjectChanges are the changes of each object.
type ObjectChanges map[ObjectIdentifier][]Change

// Result is what one run of the setters changed: per file (its path
// relative to update.path, as in Flux's template data), per object, the
// changes in document order.
type Result struct {
	FileChanges map[string]ObjectChanges
	// paths are the changed files relative to the tree's root, what a
	// commit adds.
	paths []string
}

// add records a change of obj in file.
func (r *Result) add(file string, obj ObjectIdentifier, c Change) {
	if r.FileChanges == nil {
		r.FileChanges = map[string]ObjectChanges{}
	}
	if r.FileChanges[file] == nil {
		r.FileChanges[file] = ObjectChanges{}
	}
	r.FileChanges[file][obj] = append(r.FileChanges[file][obj], c)
}

// Empty reports whether nothing changed: there is nothing to commit.
func (r Result) Empty() bool { return len(r.FileChanges) == 0 }

// Files are the changed files relative to update.path, sorted.
func (r Result) Files() []string { return slices.Sorted(maps.Keys(r.FileChanges)) }

// Objects are the changes of each object, whichever file it is in.
func (r Result) Objects() ObjectChanges {
	out := ObjectChanges{}
	for _, file := range r.Files() {
		for obj, changes := range r.FileChanges[file] {
			out[obj] = append(out[obj], changes...)
		}
	}
	return out
}

// Changes are all the changes, file by file in sorted order.
func (r Result) Changes() []Change {
	var out []Change
	for _, file := range r.Files() {
		objs := r.FileChanges[file]
		for _, obj := range sortedObjects(objs) {
			out = append(out, objs[obj]...)
		}
	}
	return out
}

func sortedObjects(m ObjectChanges) []ObjectIdentifier {
	return slices.SortedFunc(maps.Keys(m), func(a, b ObjectIdentifier) int {
		return strings.Compare(a.APIVersion+"\x00"+a.Kind+"\x00"+a.Namespace+"\x00"+a.Name,
			b.APIVersion+"\x00"+b.Kind+"\x00"+b.Namespace+"\x00"+b.Name)
	})
}
