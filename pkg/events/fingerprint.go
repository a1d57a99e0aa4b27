package events

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sort"
)

// Fingerprint identifies an event's content: the involved object, severity,
// reason, message, revision, metadata and changes. Ids, timestamps, the
// reporting instance and volatile metadata (keys starting with
// VolatilePrefix: counts at a timeout, back-off durations) are left
// out, so the same news reported twice has one fingerprint.
// notification-controller alerts each fingerprint once per provider and
// --rate-limit-interval.
func Fingerprint(e *Event) string {
	keys := make([]string, 0, len(e.Metadata))
	for k := range e.Metadata {
		if !IsVolatile(k) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	meta := make([][2]string, len(keys))
	for i, k := range keys {
		meta[i] = [2]string{k, e.Metadata[k]}
	}
	data, _ := json.Marshal(struct {
		O ObjectReference
		S Severity
		R string
		M string
		V string
		D [][2]string
		C []Change
	}{e.InvolvedObject, e.Severity, e.Reason, e.Message, e.Revision, meta, e.Changes})
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
