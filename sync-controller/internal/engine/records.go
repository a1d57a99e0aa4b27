package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"sort"
	"strconv"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plumb.dev/pkg/manage"
	"plumb.dev/pkg/object"
)

// record is what the engine remembers of one object it applied or checked.
type record struct {
	hash        string
	fingerprint string
	// version is the object's generation where it has one, otherwise its
	// resourceVersion: managedFields times have one-second resolution, so a
	// second write by the same manager in the same second leaves the
	// fingerprint as it was, but not the generation or resourceVersion.
	version string
}

// versionOf returns the version a record keeps for an object.
func versionOf(obj metav1.Object) string {
	if g := obj.GetGeneration(); g > 0 {
		return "g" + strconv.FormatInt(g, 10)
	}
	return "rv" + obj.GetResourceVersion()
}

// recordOf returns the record of an object as it is now.
func recordOf(hash string, obj metav1.Object) record {
	return record{hash: hash, fingerprint: fingerprint(obj.GetManagedFields()), version: versionOf(obj)}
}

// records is the engine's memory, safe for concurrent use.
type records struct {
	mu sync.RWMutex
	m  map[object.ID]record
}

func newRecords() *records { return &records{m: map[object.ID]record{}} }

func (r *records) get(id object.ID) (record, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	rec, ok := r.m[id]
	return rec, ok
}

func (r *records) put(id object.ID, rec record) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.m[id] = rec
}

func (r *records) forget(id object.ID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.m, id)
}

// fingerprint summarizes the managedFields entries that describe writes to
// the object itself (status subresource writes are left out: they change
// nothing Git declares). Any write by anyone changes the fingerprint. Each
// field set counts by its digest, which is all the watch cache keeps of it
// (digestManagedFields).
func fingerprint(entries []metav1.ManagedFieldsEntry) string {
	lines := make([]string, 0, len(entries))
	for _, e := range entries {
		if e.Subresource != "" {
			continue
		}
		t := ""
		if e.Time != nil {
			t = e.Time.UTC().Format(time.RFC3339)
		}
		lines = append(lines, e.Manager+"|"+string(e.Operation)+"|"+e.APIVersion+"|"+t+"|"+fieldsDigest(e.FieldsV1))
	}
	sort.Strings(lines)
	h := sha256.New()
	for _, l := range lines {
		h.Write([]byte(l))
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// foreignFingerprint is the fingerprint of the entries of managers other than
// plumb-sync: when it changes, someone else wrote the object.
func foreignFingerprint(entries []metav1.ManagedFieldsEntry) string {
	foreign := make([]metav1.ManagedFieldsEntry, 0, len(entries))
	for _, e := range entries {
		if e.Manager != manage.FieldManager {
			foreign = append(foreign, e)
		}
	}
	return fingerprint(foreign)
}

// ourWriteIsNewest reports whether plumb-sync's apply is strictly newer than
// every other write to the object (status aside). Times have a resolution of
// one second, so a tie counts as "not newest" and the object gets checked.
func ourWriteIsNewest(entries []metav1.ManagedFieldsEntry) bool {
	var ours *metav1.Time
	for i := range entries {
		e := entries[i]
		if e.Subresource == "" && e.Manager == manage.FieldManager && e.Operation == metav1.ManagedFieldsOperationApply {
			ours = e.Time
		}
	}
	if ours == nil {
		return false
	}
	for _, e := range entries {
		if e.Subresource != "" || e.Manager == manage.FieldManager {
			continue
		}
		if e.Time == nil || !e.Time.Before(ours) {
			return false
		}
	}
	return true
}
