package dispatch

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sort"
	"sync"
	"time"

	"plumb.dev/pkg/events"
)

// Fingerprint identifies an event's content: the involved object, severity,
// reason, message, revision, metadata and changes. Ids, timestamps, the
// reporting instance and volatile metadata (keys starting with
// events.VolatilePrefix: counts at a timeout, back-off durations) are left
// out, so the same news reported twice has one fingerprint.
func Fingerprint(e *events.Event) string {
	keys := make([]string, 0, len(e.Metadata))
	for k := range e.Metadata {
		if !events.IsVolatile(k) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	meta := make([][2]string, len(keys))
	for i, k := range keys {
		meta[i] = [2]string{k, e.Metadata[k]}
	}
	data, _ := json.Marshal(struct {
		O events.ObjectReference
		S events.Severity
		R string
		M string
		V string
		D [][2]string
		C []events.Change
	}{e.InvolvedObject, e.Severity, e.Reason, e.Message, e.Revision, meta, e.Changes})
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// rateLimiter remembers what was sent recently.
type rateLimiter struct {
	interval time.Duration
	now      func() time.Time

	mu   sync.Mutex
	sent map[string]time.Time
}

// newRateLimiter returns a limiter reading the time from now (time.Now
// when nil).
func newRateLimiter(interval time.Duration, now func() time.Time) *rateLimiter {
	if now == nil {
		now = time.Now
	}
	return &rateLimiter{interval: interval, now: now, sent: map[string]time.Time{}}
}

// Seen reports whether key was marked within the interval.
func (r *rateLimiter) Seen(key string) bool {
	if r.interval <= 0 {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	at, ok := r.sent[key]
	return ok && r.now().Sub(at) < r.interval
}

// Mark records that key was sent now, and forgets expired keys now and then.
func (r *rateLimiter) Mark(key string) {
	if r.interval <= 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	r.sent[key] = now
	if len(r.sent)%256 == 0 {
		for k, at := range r.sent {
			if now.Sub(at) >= r.interval {
				delete(r.sent, k)
			}
		}
	}
}
