package dispatch

import (
	"sync"
	"time"
)

// recent remembers keys for a while: what was sent recently, by provider
// and events.Fingerprint (the rate limiter), and which events were
// delivered, by alert, provider and event id (so an event JetStream
// delivers again after a lost acknowledgement is not sent twice). It holds
// at most max keys, forgetting the oldest first, so a flood of events
// cannot grow it without bound.
type recent struct {
	window time.Duration
	max    int
	now    func() time.Time

	mu sync.Mutex
	at map[string]time.Time
	// order holds the marks oldest first; a key marked again has an older
	// entry here that no longer matches at, and is skipped when popped.
	order []mark
}

type mark struct {
	key string
	at  time.Time
}

// maxRecent bounds each memory: at about 200 bytes a key, 20 MB at most.
const maxRecent = 100_000

// newRecent returns a memory of keys for window, reading the time from now
// (time.Now when nil). A window of zero remembers nothing.
func newRecent(window time.Duration, max int, now func() time.Time) *recent {
	if now == nil {
		now = time.Now
	}
	return &recent{window: window, max: max, now: now, at: map[string]time.Time{}}
}

// Seen reports whether key was marked within the window.
func (r *recent) Seen(key string) bool {
	if r.window <= 0 {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	at, ok := r.at[key]
	return ok && r.now().Sub(at) < r.window
}

// Mark records key now, and forgets the keys whose window has passed and,
// beyond max, the oldest.
func (r *recent) Mark(key string) {
	if r.window <= 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	r.at[key] = now
	r.order = append(r.order, mark{key: key, at: now})
	for len(r.order) > 0 {
		oldest := r.order[0]
		if now.Sub(oldest.at) < r.window && len(r.at) <= r.max && len(r.order) <= 2*r.max {
			break
		}
		r.order = r.order[1:]
		if r.at[oldest.key].Equal(oldest.at) {
			delete(r.at, oldest.key)
		}
	}
}
