package live

import (
	"context"
	"sync"
)

// BufferSize is how many changes wait for one slow page before it is
// disconnected.
const BufferSize = 256

// Hub hands every change published to every subscriber.
type Hub struct {
	mu   sync.Mutex
	subs map[*subscriber]struct{}
}

// NewHub returns a Hub without subscribers.
func NewHub() *Hub { return &Hub{subs: map[*subscriber]struct{}{}} }

// subscriber is one open stream.
type subscriber struct {
	changes chan Change
	// overflow is closed when the subscriber fell BufferSize changes
	// behind; it gets no more.
	overflow chan struct{}
}

// Publish hands c to every subscriber without waiting for any: one whose
// buffer is full is dropped.
func (h *Hub) Publish(c Change) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs {
		select {
		case s.changes <- c:
		default:
			close(s.overflow)
			delete(h.subs, s)
		}
	}
}

// subscribe returns a new subscriber and the function that ends it.
func (h *Hub) subscribe() (*subscriber, func()) {
	s := &subscriber{changes: make(chan Change, BufferSize), overflow: make(chan struct{})}
	h.mu.Lock()
	h.subs[s] = struct{}{}
	h.mu.Unlock()
	return s, func() {
		h.mu.Lock()
		delete(h.subs, s)
		h.mu.Unlock()
	}
}

// Forward publishes src's changes until ctx ends or src closes its
// channel.
func (h *Hub) Forward(ctx context.Context, src ChangeSource) {
	changes, stop := src.Changes()
	defer stop()
	for {
		select {
		case <-ctx.Done():
			return
		case c, ok := <-changes:
			if !ok {
				return
			}
			h.Publish(c)
		}
	}
}
