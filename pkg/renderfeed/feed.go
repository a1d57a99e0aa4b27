package renderfeed

import (
	"net/http"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Bounds of a Feed.
const (
	// DefaultMaxSubscribers is how many connections a Feed serves at once:
	// one sync-controller per shard is the subscriber, and a standby or a
	// replacement may connect while the old connection closes.
	DefaultMaxSubscribers = 4
	// MaxBacklog is how many lines a subscriber may fall behind before it
	// is cut off; it reconnects and reads the snapshot, which holds one
	// record per object however many renders happened.
	MaxBacklog = 4096
	// Heartbeat is how often an idle feed sends an empty line, so that the
	// subscriber can tell a silent feed from a dead connection.
	Heartbeat = 20 * time.Second
	// writeTimeout bounds each write to a subscriber.
	writeTimeout = 30 * time.Second
)

// Feed is render-controller's side of the feed: the pending records and
// the subscribers. The zero value is ready; it is safe for concurrent use.
type Feed struct {
	// MaxSubscribers bounds the connections served at once; zero is
	// DefaultMaxSubscribers.
	MaxSubscribers int

	mu      sync.Mutex
	pending map[types.NamespacedName]*pendingRecord
	subs    map[*subscriber]struct{}
}

// pendingRecord is a record offered and not yet in its object's status.
type pendingRecord struct {
	rec  Record
	line []byte
	// since is when this render of the object was first offered.
	since time.Time
}

// subscriber is one connection's queue of lines; cut is closed when it
// falls behind or the server shuts down.
type subscriber struct {
	lines chan []byte
	cut   chan struct{}
	once  sync.Once
}

func (s *subscriber) close() { s.once.Do(func() { close(s.cut) }) }

// Subscribed says whether a subscriber is connected: render-controller
// offers a render only then, and writes it to status itself otherwise.
func (f *Feed) Subscribed() bool {
	if f == nil {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.subs) > 0
}

// Offer adds rec as its object's pending render, replacing an older one,
// and sends it to every subscriber. It returns when this render of the
// object (same UID, generation and digest) was first offered — now for a
// new one — so that the caller can tell when its grace is over; an error
// when rec is too large to be a record. The same render offered again is
// sent again only when it names other render statuses it replaces.
func (f *Feed) Offer(rec Record, now time.Time) (time.Time, error) {
	line, err := rec.encode()
	if err != nil {
		return time.Time{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	key := rec.Key()
	since := now
	if p, ok := f.pending[key]; ok && sameRender(p.rec, rec) {
		if slices.Equal(p.rec.Replaces, rec.Replaces) {
			return p.since, nil
		}
		// The same render, of a newer read of its object's status (the
		// first read may have come from a cache behind a write that
		// made sync-controller drop the record): sent again, its grace
		// going on.
		since = p.since
	}
	if f.pending == nil {
		f.pending = map[types.NamespacedName]*pendingRecord{}
	}
	f.pending[key] = &pendingRecord{rec: rec, line: line, since: since}
	f.send(line)
	return since, nil
}

// Pending returns the object's pending record and when it was first
// offered.
func (f *Feed) Pending(key types.NamespacedName) (Record, time.Time, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.pending[key]
	if !ok {
		return Record{}, time.Time{}, false
	}
	return p.rec, p.since, true
}

// Taken drops the object's pending record: its status has the render.
func (f *Feed) Taken(key types.NamespacedName) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.pending, key)
}

// Withdraw drops the object's pending record and tells the subscribers
// that no record of it before this one may be used: render-controller
// writes its status itself. Nothing is sent when no subscriber is
// connected (a new one reads the snapshot, which no longer has it).
func (f *Feed) Withdraw(rec Record) {
	rec.Withdrawn, rec.Artifact, rec.Message, rec.Replaces = true, nil, "", nil
	line, err := rec.encode()
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.pending, rec.Key())
	if err == nil {
		f.send(line)
	}
}

// send queues line to every subscriber, cutting off one whose queue is
// full. Called with mu held.
func (f *Feed) send(line []byte) {
	for s := range f.subs {
		select {
		case s.lines <- line:
		default:
			delete(f.subs, s)
			s.close()
		}
	}
}

// Shutdown cuts every subscriber off: the server is stopping, and a
// stream would hold its graceful shutdown for its whole timeout.
func (f *Feed) Shutdown() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for s := range f.subs {
		delete(f.subs, s)
		s.close()
	}
}

// subscribe registers a subscriber and returns it with the snapshot, in
// one step, so that no offer falls between the two; nil when the feed
// has its MaxSubscribers.
func (f *Feed) subscribe() (*subscriber, [][]byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	limit := f.MaxSubscribers
	if limit <= 0 {
		limit = DefaultMaxSubscribers
	}
	if len(f.subs) >= limit {
		return nil, nil
	}
	if f.subs == nil {
		f.subs = map[*subscriber]struct{}{}
	}
	s := &subscriber{lines: make(chan []byte, MaxBacklog), cut: make(chan struct{})}
	f.subs[s] = struct{}{}
	snapshot := make([][]byte, 0, len(f.pending))
	for _, p := range f.pending {
		snapshot = append(snapshot, p.line)
	}
	return s, snapshot
}

func (f *Feed) unsubscribe(s *subscriber) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.subs, s)
	s.close()
}

// ServeHTTP serves GET /renders: the snapshot, then each record as it
// is offered or withdrawn, and an empty line every Heartbeat while
// nothing happens, until the client goes or is cut off. 405 for other
// methods; 503 while MaxSubscribers are connected.
func (f *Feed) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", "GET")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	s, snapshot := f.subscribe()
	if s == nil {
		http.Error(w, "the render feed has all the subscribers it serves", http.StatusServiceUnavailable)
		return
	}
	defer f.unsubscribe(s)
	rc := http.NewResponseController(w)
	// The server's read and write timeouts bound a request and a file's
	// download; a stream lives as long as its subscriber, so each write
	// has its own deadline instead, and no read follows the request.
	_ = rc.SetReadDeadline(time.Time{})
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	write := func(lines ...[]byte) bool {
		if err := rc.SetWriteDeadline(time.Now().Add(writeTimeout)); err != nil {
			return false
		}
		for _, l := range lines {
			if _, err := w.Write(l); err != nil {
				return false
			}
		}
		return rc.Flush() == nil
	}
	if !write(snapshot...) {
		return
	}
	heartbeat := time.NewTicker(Heartbeat)
	defer heartbeat.Stop()
	for {
		select {
		case line := <-s.lines:
			if !write(line) {
				return
			}
		case <-heartbeat.C:
			if !write([]byte("\n")) {
				return
			}
		case <-s.cut:
			return
		case <-r.Context().Done():
			return
		}
	}
}

// sameRender says whether a and b are the same render of the same object.
func sameRender(a, b Record) bool {
	return a.UID == b.UID && a.Generation == b.Generation && a.Artifact != nil && b.Artifact != nil &&
		a.Artifact.Digest == b.Artifact.Digest && a.Artifact.Revision == b.Artifact.Revision && a.Artifact.URL == b.Artifact.URL
}
