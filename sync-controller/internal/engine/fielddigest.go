package engine

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
)

// digestMark starts the FieldsV1 that the watch cache keeps in place of a
// field set: {"plumb.dev/sha256":"<16 hex digits>"}. It is JSON, so the
// entry still serializes, but not a field set: anything that parses it as
// one (fieldpath) fails instead of reading an empty set.
var digestMark = []byte(`{"plumb.dev/sha256":"`)

// fieldsDigest is what the engine compares of a managedFields entry's field
// set: the first 8 bytes of its SHA-256, in hex. A set the watch cache
// already replaced by its digest (digestManagedFields) gives that digest,
// so an object read from the API server and its cached copy agree.
func fieldsDigest(f *metav1.FieldsV1) string {
	raw := f.GetRawBytes() // nil-safe
	if rest, ok := bytes.CutPrefix(raw, digestMark); ok {
		return string(bytes.TrimSuffix(rest, []byte(`"}`)))
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:8])
}

// digestManagedFields is the managed-object caches' transform: each
// managedFields entry keeps its manager, operation, API version, time and
// subresource, which the drift watch and the unchanged check read, and its
// field set only as its digest. The sets are most of a cached object's
// metadata (a ConfigMap's lists every key) and nothing reads them from the
// cache: the drift check's owners of a field come from the object it GETs,
// and ssa: Override's hand-over reads the object from the API server
// (takeback.go).
func digestManagedFields() toolscache.TransformFunc {
	return func(in any) (any, error) {
		obj, err := meta.Accessor(in)
		if err != nil {
			return in, nil // a tombstone: its object was transformed when stored
		}
		entries := obj.GetManagedFields()
		for i := range entries {
			if entries[i].FieldsV1 == nil {
				continue
			}
			entries[i].FieldsV1 = metav1.NewFieldsV1(string(digestMark) + fieldsDigest(entries[i].FieldsV1) + `"}`)
		}
		return in, nil
	}
}
