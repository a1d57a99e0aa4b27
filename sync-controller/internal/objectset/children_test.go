package objectset

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// takenBy names the writers that took a field of the set's, and nobody
// for the set's own applies, for writes of fields the set does not set,
// or for status writes.
func TestTakenByNamesTheWritersOfTheSetsFields(t *testing.T) {
	at := func(sec int) *metav1.Time { return &metav1.Time{Time: time.Unix(1_800_000_000+int64(sec), 0)} }
	entry := func(manager string, sec int, fields, subresource string) metav1.ManagedFieldsEntry {
		op := metav1.ManagedFieldsOperationUpdate
		if manager == FieldManager {
			op = metav1.ManagedFieldsOperationApply
		}
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: op, Time: at(sec), Subresource: subresource,
			FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(fields)}
	}
	const both = `{"f:spec":{"f:path":{},"f:prune":{}}}`
	const prune = `{"f:spec":{"f:prune":{}}}`
	const path = `{"f:spec":{"f:path":{}}}`
	const annotation = `{"f:metadata":{"f:annotations":{"f:a":{}}}}`
	for _, c := range []struct {
		name     string
		old, new []metav1.ManagedFieldsEntry
		want     []string
	}{
		{"an edit of a field the set sets", []metav1.ManagedFieldsEntry{entry(FieldManager, 0, both, "")},
			[]metav1.ManagedFieldsEntry{entry(FieldManager, 0, prune, ""), entry("kubectl-edit", 5, path, "")}, []string{"kubectl-edit"}},
		{"every field taken", []metav1.ManagedFieldsEntry{entry(FieldManager, 0, path, "")},
			[]metav1.ManagedFieldsEntry{entry("kubectl-edit", 5, path, "")}, []string{"kubectl-edit"}},
		{"the set's own apply takes a field back", []metav1.ManagedFieldsEntry{entry(FieldManager, 0, prune, ""), entry("kubectl-edit", 5, path, "")},
			[]metav1.ManagedFieldsEntry{entry(FieldManager, 9, both, "")}, nil},
		{"the set's apply within the same second", []metav1.ManagedFieldsEntry{entry(FieldManager, 0, prune, ""), entry("kubectl-edit", 0, path, "")},
			[]metav1.ManagedFieldsEntry{entry(FieldManager, 0, both, "")}, nil},
		{"an annotation the set does not set", []metav1.ManagedFieldsEntry{entry(FieldManager, 0, both, "")},
			[]metav1.ManagedFieldsEntry{entry(FieldManager, 0, both, ""), entry("a-person", 5, annotation, "")}, nil},
		{"a status write", []metav1.ManagedFieldsEntry{entry(FieldManager, 0, both, "")},
			[]metav1.ManagedFieldsEntry{entry(FieldManager, 0, both, ""), entry("plumb-sync", 5, `{"f:status":{}}`, "status")}, nil},
		{"not applied by a set", []metav1.ManagedFieldsEntry{entry("kubectl-create", 0, both, "")},
			[]metav1.ManagedFieldsEntry{entry("kubectl-edit", 5, both, "")}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			NewWithT(t).Expect(takenBy(c.old, c.new)).To(Equal(c.want))
		})
	}
}
