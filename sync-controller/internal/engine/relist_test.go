package engine

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plumb.dev/pkg/manage"
)

// TestAForeignWriteAfterOurApplyIsDriftWhenOneUpdateCarriesBoth: after
// the API server was away, an informer relists and hands every write it
// missed over as one update. When that update holds our apply of a new
// revision and a hand edit after it, it is a foreign write (a drift
// check); our apply alone, also when it took fields from another
// manager, is not.
func TestAForeignWriteAfterOurApplyIsDriftWhenOneUpdateCarriesBoth(t *testing.T) {
	at := func(sec int) *metav1.Time {
		tm := metav1.NewTime(time.Date(2026, 12, 6, 20, 0, sec, 0, time.UTC))
		return &tm
	}
	ours := func(sec int) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manage.FieldManager, Operation: metav1.ManagedFieldsOperationApply, APIVersion: "v1", Time: at(sec),
			FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:data":{"f:greeting":{}}}`)}
	}
	edit := func(sec int, fields string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: "kubectl-edit", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: at(sec),
			FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(fields)}
	}
	object := func(rv string, entries ...metav1.ManagedFieldsEntry) *metav1.PartialObjectMetadata {
		return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{ResourceVersion: rv, ManagedFields: entries}}
	}
	greeting := `{"f:data":{"f:greeting":{}}}`
	for name, c := range map[string]struct {
		old, new *metav1.PartialObjectMetadata
		foreign  bool
	}{
		"our apply alone": {
			old: object("1", ours(0)), new: object("2", ours(10)), foreign: false,
		},
		"our apply taking the field back from a hand edit": {
			old: object("2", ours(0), edit(5, greeting)), new: object("3", ours(10), edit(5, `{"f:data":{}}`)), foreign: false,
		},
		"our apply and a hand edit after it, in one update": {
			old: object("1", ours(0)), new: object("3", ours(10), edit(30, greeting)), foreign: true,
		},
		"our apply and a hand edit in the same second": {
			old: object("1", ours(0)), new: object("3", ours(10), edit(10, greeting)), foreign: true,
		},
		"a hand edit alone": {
			old: object("1", ours(0)), new: object("2", ours(0), edit(30, greeting)), foreign: true,
		},
	} {
		t.Run(name, func(t *testing.T) {
			if got := foreignWrite(c.old, c.new); got != c.foreign {
				t.Errorf("foreignWrite = %t, want %t", got, c.foreign)
			}
		})
	}
}
