package stream

import (
	"context"
	"fmt"
	"net/http"
	"plumb.dev/ui/internal/live"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"plumb.dev/pkg/events"
)

// entry is one stored event and its stream sequence. The event is never
// changed once stored, so a query may read it after letting go of the lock.
type entry struct {
	seq  uint64
	size int64
	ev   *events.Event
}

// Change says that an event about an object was stored: what the live
// stream (/api/live) pushes so that a page refetches that object. It is
// the live stream's own type, so an Index is a live.ChangeSource.
type Change = live.Change

// changesBuffer is how many changes wait for one slow reader before newer
// ones are dropped for it: a reader that falls that far behind refetches
// anyway, and the Index never waits for one.
const changesBuffer = 256

// Index is the newest events of the stream, in stream order, bounded in
// count and bytes.
type Index struct {
	maxEvents int
	maxBytes  int64
	log       logr.Logger
	// deadline bounds one page's time (Deadline; tests shorten it).
	deadline time.Duration

	mu sync.RWMutex
	// entries[head:] are the stored events, oldest first; dropping the
	// oldest moves head, and the slice is compacted once half of it is
	// dropped.
	entries []entry
	head    int
	bytes   int64
	// last is the highest sequence seen (stored or skipped): the reader
	// goes on after it, and an event redelivered at or below it is
	// ignored.
	last uint64

	synced     chan struct{}
	syncedOnce sync.Once

	// conn is the NATS connection, nil without a NATS URL; stop ends the
	// reader, which closes stopped when it is done (Close).
	conn    *events.Conn
	stop    context.CancelFunc
	stopped chan struct{}

	// skips counts the events skipped since skipLogged (skipped).
	skips      int
	skipLogged time.Time

	subsMu sync.Mutex
	subs   map[chan Change]struct{}
}

func newIndex(cfg Config) *Index {
	return &Index{maxEvents: cfg.MaxEvents, maxBytes: cfg.MaxBytes, log: cfg.Log, deadline: Deadline,
		synced: make(chan struct{}), subs: map[chan Change]struct{}{}}
}

// Synced is closed once the history stored when the Index started has been
// read (or there was none to read).
func (x *Index) Synced() <-chan struct{} { return x.synced }

func (x *Index) markSynced() { x.syncedOnce.Do(func() { close(x.synced) }) }

func (x *Index) isSynced() bool {
	select {
	case <-x.synced:
		return true
	default:
		return false
	}
}

// Check is a readiness check: it fails while the NATS server refuses the
// UI's credentials, permissions or TLS (pkg/events.Conn.Check), and passes
// while NATS is merely unreachable: the UI still serves what it holds.
func (x *Index) Check(r *http.Request) error {
	if x.conn == nil {
		return nil
	}
	return x.conn.Check(r)
}

// reset forgets every event, for a stream whose sequences started over.
func (x *Index) reset() {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.entries, x.head, x.bytes, x.last = nil, 0, 0, 0
}

// Len returns how many events and bytes the Index holds.
func (x *Index) Len() (count int, bytes int64) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.entries) - x.head, x.bytes
}

// lastSeq is the sequence to read after.
func (x *Index) lastSeq() uint64 {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.last
}

// add stores the event read at seq, unless it was seen already, is too
// large or does not decode, and tells the readers of Changes once the
// history is read: replaying the history is no news. Only the reader
// calls it, so the check of last and the store need not be one critical
// section, and the event is decoded without holding the lock.
func (x *Index) add(seq uint64, data []byte) {
	if seq <= x.lastSeq() {
		return
	}
	ev, err := decode(data)
	x.mu.Lock()
	x.last = seq
	if err == nil {
		x.entries = append(x.entries, entry{seq: seq, size: int64(len(data)), ev: ev})
		x.bytes += int64(len(data))
		x.evict()
	}
	x.mu.Unlock()
	if err != nil {
		x.skipped(seq, err)
		return
	}
	if x.isSynced() {
		x.notify(Change{Kind: ev.InvolvedObject.Kind, Namespace: ev.InvolvedObject.Namespace,
			Name: ev.InvolvedObject.Name, Reason: ev.Reason})
	}
}

// skipLogEvery bounds how often skipped events are logged: whoever may
// publish on the stream must not be able to fill the UI's log.
const skipLogEvery = time.Minute

// skipped logs an event left out of the Index: the first one, and then at
// most once a minute with how many there were since. Only the reader
// calls it.
func (x *Index) skipped(seq uint64, err error) {
	x.skips++
	if !x.skipLogged.IsZero() && time.Since(x.skipLogged) < skipLogEvery {
		return
	}
	x.log.Info("skipping events the UI cannot show", "seq", seq, "error", err.Error(), "skipped", x.skips)
	x.skipLogged, x.skips = time.Now(), 0
}

// decode checks one event as read from the stream.
func decode(data []byte) (*events.Event, error) {
	if len(data) > MaxEventBytes {
		return nil, fmt.Errorf("%d bytes, more than the %d the UI indexes", len(data), MaxEventBytes)
	}
	return events.Decode(data)
}

// evict drops the oldest events beyond the bounds; x.mu is held.
func (x *Index) evict() {
	for n := len(x.entries) - x.head; n > 0 && (n > x.maxEvents || x.bytes > x.maxBytes); n-- {
		x.bytes -= x.entries[x.head].size
		x.entries[x.head] = entry{} // let the event be collected
		x.head++
	}
	if x.head > 0 && x.head >= len(x.entries)/2 {
		x.entries = append(make([]entry, 0, max(len(x.entries)-x.head, 16)), x.entries[x.head:]...)
		x.head = 0
	}
}

// Changes returns a channel that receives a Change for each event stored
// from now on, and the function that ends it (and closes the channel). A
// reader that does not keep up misses changes rather than slowing the
// Index.
func (x *Index) Changes() (<-chan Change, func()) {
	ch := make(chan Change, changesBuffer)
	x.subsMu.Lock()
	x.subs[ch] = struct{}{}
	x.subsMu.Unlock()
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			x.subsMu.Lock()
			delete(x.subs, ch)
			close(ch)
			x.subsMu.Unlock()
		})
	}
}

func (x *Index) notify(c Change) {
	x.subsMu.Lock()
	defer x.subsMu.Unlock()
	for ch := range x.subs {
		select {
		case ch <- c:
		default: // this reader is behind: it misses this one
		}
	}
}

// filter is what a query asks for; empty fields match everything.
type filter struct {
	kind, namespace, name, severity string
	// reasons match any of them.
	reasons []string
	// object matches a drift event with a change of that object
	// (pkg/object's ID text, as on the event).
	object string
}

func (f filter) matches(e *events.Event) bool {
	o := &e.InvolvedObject
	// The most selective tests first: a query scans the whole index.
	switch {
	case f.name != "" && f.name != o.Name,
		f.namespace != "" && f.namespace != o.Namespace,
		len(f.reasons) > 0 && !contains(f.reasons, e.Reason),
		f.severity != "" && f.severity != string(e.Severity),
		f.kind != "" && !strings.EqualFold(f.kind, o.Kind):
		return false
	}
	if f.object == "" {
		return true
	}
	for _, c := range e.Changes {
		if c.Object == f.object {
			return true
		}
	}
	return false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// scanBatch is how many matching events are taken under the lock at a
// time before they are checked against the user's access, which may ask
// the API server and so must not hold the lock.
const scanBatch = 200

// query returns up to limit events matching f, newest first, older than
// the sequence before (0: from the newest), for which allowed is true; and
// the sequence to pass as before for the next page, 0 when there is none.
// It looks at no more than maxScanned stored events, and stops where
// allowed says stop (its budget ran out): then next is where it stopped,
// so that the next page goes on from there, even if this one is short or
// empty.
func (x *Index) query(f filter, before uint64, limit, maxScanned int, allowed func(*events.Event) (ok, stop bool)) (out []entry, next uint64) {
	cursor := before
	for len(out) < limit {
		batch, resume, more, looked := x.scan(f, cursor, scanBatch, maxScanned)
		maxScanned -= looked
		for i, e := range batch {
			ok, stop := allowed(e.ev)
			if stop {
				return out, e.seq + 1 // e itself is still to be decided
			}
			if !ok {
				continue
			}
			out = append(out, e)
			if len(out) == limit {
				if i < len(batch)-1 || more {
					next = e.seq
				}
				return out, next
			}
		}
		if !more {
			return out, 0
		}
		if maxScanned <= 0 {
			return out, resume
		}
		cursor = resume
	}
	return out, next
}

// scan takes up to n events matching f older than before (0: the newest
// on), newest first, looking at no more than maxLook stored events. more
// says whether older ones remain to be looked at, from resume on (the
// before of the next scan); looked is how many it looked at.
func (x *Index) scan(f filter, before uint64, n, maxLook int) (batch []entry, resume uint64, more bool, looked int) {
	if maxLook <= 0 {
		return nil, before, true, 0
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	live := x.entries[x.head:]
	i := len(live)
	if before > 0 {
		i = sort.Search(len(live), func(j int) bool { return live[j].seq >= before })
	}
	for i--; i >= 0; i-- {
		if looked == maxLook {
			return batch, live[i+1].seq, true, looked
		}
		looked++
		if !f.matches(live[i].ev) {
			continue
		}
		if len(batch) == n {
			return batch, batch[n-1].seq, true, looked
		}
		batch = append(batch, live[i])
	}
	return batch, 0, false, looked
}
