package capped

import (
	"errors"
	"fmt"
	"sync"
)

// Keep says which bytes a Buffer keeps once more than its cap was written.
type Keep int

const (
	// First keeps the first bytes and refuses every write past the cap.
	First Keep = iota
	// Last keeps the last bytes.
	Last
	// FirstAndLast keeps the first and the last half of the cap.
	FirstAndLast
)

// ErrFull is wrapped by the error of a write a First buffer refused.
var ErrFull = errors.New("output too long")

// Buffer keeps at most Max bytes of what is written to it, the ones Keep
// says. Its zero value keeps nothing.
type Buffer struct {
	// Max is the cap, in bytes.
	Max int
	// Keep says which bytes stay past the cap.
	Keep Keep
	// OnFull, when set, runs once, at the first write a First buffer
	// refuses: the place to cancel the process that writes.
	OnFull func()

	mu         sync.Mutex
	head, tail []byte
	cut        int64
	full       bool
}

// New is a buffer of max bytes that keeps the ones keep says.
func New(max int, keep Keep) *Buffer { return &Buffer{Max: max, Keep: keep} }

// Write keeps what fits of p. A First buffer refuses the write that
// would pass its cap, whole, and every one after it.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch b.Keep {
	case First:
		if b.full || len(b.head)+len(p) > b.Max {
			b.cut += int64(len(p))
			if !b.full && b.OnFull != nil {
				b.OnFull()
			}
			b.full = true
			return 0, fmt.Errorf("%w: more than %d bytes", ErrFull, b.Max)
		}
		b.head = append(b.head, p...)
	case Last:
		b.tail = b.keepLast(b.tail, p, b.Max)
	case FirstAndLast:
		rest := p
		if room := b.Max/2 - len(b.head); room > 0 {
			take := min(room, len(rest))
			b.head = append(b.head, rest[:take]...)
			rest = rest[take:]
		}
		b.tail = b.keepLast(b.tail, rest, b.Max/2)
	}
	return len(p), nil
}

// keepLast appends p to kept and drops the oldest bytes past max,
// counting them as cut.
func (b *Buffer) keepLast(kept, p []byte, max int) []byte {
	kept = append(kept, p...)
	over := len(kept) - max
	if over <= 0 {
		return kept
	}
	b.cut += int64(over)
	// A copy rather than a reslice: the dropped bytes' array is freed.
	return append([]byte(nil), kept[over:]...)
}

// Bytes is a copy of what was kept, the first bytes before the last.
func (b *Buffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]byte, 0, len(b.head)+len(b.tail))
	return append(append(out, b.head...), b.tail...)
}

// String is what was kept, as Bytes.
func (b *Buffer) String() string { return string(b.Bytes()) }

// Full says whether a First buffer refused a write.
func (b *Buffer) Full() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.full
}

// Cut is how many of the bytes written were not kept.
func (b *Buffer) Cut() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.cut
}
