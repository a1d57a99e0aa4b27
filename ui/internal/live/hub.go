package live

import (
	"context"
	"errors"
	"sync"
)

// BufferSize is how many changes wait for one slow page before it is
// disconnected.
const BufferSize = 256

// The open streams allowed: a page needs one (the app shares it across
// its views), a few tabs a few; each costs a goroutine, a buffer and a
// connection, so neither one session nor all of them together may open
// them without end.
const (
	MaxStreamsPerSession = 4
	MaxStreams           = 1000
)

// errTooMany is subscribe's refusal beyond the bounds.
var errTooMany = errors.New("too many live streams open")

// Hub hands every change published to every subscriber.
type Hub struct {
	mu   sync.Mutex
	subs map[*subscriber]struct{}
	// open counts the open streams of each owner (a session).
	open map[any]int
	// maxPerOwner and max are the bounds; NewHub sets the defaults.
	maxPerOwner, max int
}

// NewHub returns a Hub without subscribers.
func NewHub() *Hub {
	return &Hub{subs: map[*subscriber]struct{}{}, open: map[any]int{},
		maxPerOwner: MaxStreamsPerSession, max: MaxStreams}
}

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

// subscribe returns a new subscriber of owner (its session) and the
// function that ends it, which frees its place; errTooMany when owner has
// maxPerOwner streams open or the Hub max. A subscriber dropped for
// falling behind keeps its place until its stream ends.
func (h *Hub) subscribe(owner any) (*subscriber, func(), error) {
	s := &subscriber{changes: make(chan Change, BufferSize), overflow: make(chan struct{})}
	h.mu.Lock()
	defer h.mu.Unlock()
	total := 0
	for _, n := range h.open {
		total += n
	}
	if h.open[owner] >= h.maxPerOwner || total >= h.max {
		return nil, nil, errTooMany
	}
	h.open[owner]++
	h.subs[s] = struct{}{}
	var once sync.Once
	return s, func() {
		once.Do(func() {
			h.mu.Lock()
			defer h.mu.Unlock()
			delete(h.subs, s)
			if h.open[owner]--; h.open[owner] <= 0 {
				delete(h.open, owner)
			}
		})
	}, nil
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
