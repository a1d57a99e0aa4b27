package dispatch

import (
	"sync"
	"time"
)

// rateLimiter remembers what was sent recently, by provider and
// events.Fingerprint.
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
