package live

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"plumb.dev/ui/internal/access"
	"plumb.dev/ui/internal/httpapi"
)

// Heartbeat is how often an idle stream gets a comment line.
const Heartbeat = 15 * time.Second

// retryMillis is the reconnect delay the stream announces to EventSource.
const retryMillis = 1000

// Handler serves GET /api/live from a Hub.
type Handler struct {
	Hub *Hub
	// Heartbeat overrides the default Heartbeat (tests).
	Heartbeat time.Duration
}

// ServeHTTP serves GET /api/live.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s := access.From(r)
	if s == nil {
		httpapi.Error(w, http.StatusUnauthorized, "sign in first")
		return
	}
	rc := http.NewResponseController(w)
	// A stream lasts as long as the page: the server's write timeout,
	// which bounds every other answer, must not end it; nor its read
	// timeout, which bounds reading a request, not how long it is served.
	if err := errors.Join(rc.SetWriteDeadline(time.Time{}), rc.SetReadDeadline(time.Time{})); err != nil {
		httpapi.Error(w, http.StatusInternalServerError, "this connection cannot stream: %v", err)
		return
	}
	sub, done, err := h.Hub.subscribe(s)
	if err != nil {
		w.Header().Set("Retry-After", "5")
		httpapi.Error(w, http.StatusTooManyRequests, "%v: at most %d a session and %d in all; close other tabs", err, h.Hub.maxPerOwner, h.Hub.max)
		return
	}
	defer done()

	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no") // nginx: do not hold events back
	w.WriteHeader(http.StatusOK)
	if _, err := fmt.Fprintf(w, "retry: %d\n: connected\n\n", retryMillis); err != nil || rc.Flush() != nil {
		return
	}
	every := h.Heartbeat
	if every <= 0 {
		every = Heartbeat
	}
	beat := time.NewTicker(every)
	defer beat.Stop()
	// The stream ends with its session: at sign-out, and at its expiry
	// even while nothing else asks the Gate about it.
	var expired <-chan time.Time
	if at := s.Expires(); !at.IsZero() {
		t := time.NewTimer(time.Until(at))
		defer t.Stop()
		expired = t.C
	}
	ctx := r.Context()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.Ended():
			return
		case <-expired:
			return
		case <-sub.overflow:
			return // too far behind: the page reconnects and refetches
		case <-beat.C:
			if _, err := fmt.Fprint(w, ": heartbeat\n\n"); err != nil || rc.Flush() != nil {
				return
			}
		case c := <-sub.changes:
			if !s.MayGetObject(ctx, c.Kind, c.Namespace, c.Name) {
				continue
			}
			data, err := json.Marshal(c)
			if err != nil {
				continue
			}
			if _, err := fmt.Fprintf(w, "event: change\ndata: %s\n\n", data); err != nil || rc.Flush() != nil {
				return
			}
		}
	}
}
