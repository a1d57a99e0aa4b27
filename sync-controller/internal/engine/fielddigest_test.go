package engine

import (
	"bytes"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"plumb.dev/pkg/manage"
)

// TestTheWatchCacheKeepsADigestOfEachFieldSet: the managed objects' cache
// keeps each managedFields entry's manager, operation, time and
// subresource, and of its field set only a digest; the fingerprint of the
// cached copy is the fingerprint of the object the API server returns,
// so a record made from an apply's answer still matches the cache, and a
// foreign write still changes it.
func TestTheWatchCacheKeepsADigestOfEachFieldSet(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 12, 7, 1, 0, 0, 0, time.UTC))
	data := `{"f:data":{"f:a":{},"f:b":{},"f:c":{}},"f:metadata":{"f:annotations":{"f:plumb.dev/applied-hash":{}},"f:labels":{"f:kustomize.plumb.dev/name":{},"f:kustomize.plumb.dev/namespace":{}}}}`
	object := func(fields ...string) *metav1.PartialObjectMetadata {
		obj := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "cm", ResourceVersion: "7"}}
		managers := []string{manage.FieldManager, "kubectl-edit"}
		for i, f := range fields {
			obj.ManagedFields = append(obj.ManagedFields, metav1.ManagedFieldsEntry{Manager: managers[i], Operation: metav1.ManagedFieldsOperationApply,
				APIVersion: "v1", Time: &at, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(f)})
		}
		obj.ManagedFields = append(obj.ManagedFields, metav1.ManagedFieldsEntry{Manager: "status-writer", Operation: metav1.ManagedFieldsOperationUpdate,
			APIVersion: "v1", Time: &at, Subresource: "status"})
		return obj
	}
	cached := func(obj *metav1.PartialObjectMetadata) *metav1.PartialObjectMetadata {
		t.Helper()
		out, err := digestManagedFields()(obj.DeepCopy())
		if err != nil {
			t.Fatal(err)
		}
		return out.(*metav1.PartialObjectMetadata)
	}

	served := object(data, `{"f:data":{"f:a":{}}}`)
	kept := cached(served)
	for i, e := range kept.ManagedFields {
		was := served.ManagedFields[i]
		if e.Manager != was.Manager || e.Operation != was.Operation || e.APIVersion != was.APIVersion || !e.Time.Equal(was.Time) || e.Subresource != was.Subresource {
			t.Errorf("entry %d kept as %+v, want its manager, operation, version, time and subresource as %+v", i, e, was)
		}
		if was.FieldsV1 == nil {
			continue
		}
		if raw := e.FieldsV1.GetRawBytes(); len(raw) > 40 || bytes.Contains(raw, []byte("f:data")) {
			t.Errorf("entry %d keeps %q, want only a digest of its field set", i, raw)
		}
		if err := (&fieldpath.Set{}).FromJSON(e.FieldsV1.GetRawReader()); err == nil {
			t.Errorf("entry %d's digest %q parses as a field set; it must not pass for an empty one", i, e.FieldsV1.GetRawBytes())
		}
	}
	if got, want := fingerprint(kept.ManagedFields), fingerprint(served.ManagedFields); got != want {
		t.Errorf("fingerprint of the cached copy %s, of the served object %s", got, want)
	}
	if got, want := foreignFingerprint(kept.ManagedFields), foreignFingerprint(served.ManagedFields); got != want {
		t.Errorf("foreign fingerprint of the cached copy %s, of the served object %s", got, want)
	}
	if again := cached(kept); fingerprint(again.ManagedFields) != fingerprint(served.ManagedFields) {
		t.Error("a cached copy transformed again changes its fingerprint")
	}
	if recordOf("h", kept) != recordOf("h", served) {
		t.Error("the record of the cached copy differs from the record of the served object")
	}

	edited := cached(object(data, `{"f:data":{"f:b":{}}}`))
	if foreignFingerprint(edited.ManagedFields) == foreignFingerprint(kept.ManagedFields) {
		t.Error("another manager taking a field in the same second leaves the cached foreign fingerprint as it was")
	}
	if !foreignWrite(kept, edited) {
		t.Error("the foreign write between two cached copies is not seen")
	}
}
