package capped

import (
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
)

func write(t *testing.T, b *Buffer, parts ...string) []error {
	t.Helper()
	var errs []error
	for _, p := range parts {
		n, err := b.Write([]byte(p))
		if err == nil && n != len(p) {
			t.Fatalf("wrote %d of %d bytes without an error", n, len(p))
		}
		errs = append(errs, err)
	}
	return errs
}

func TestFirstKeepsAPrefixAndRefusesTheWritePastTheCap(t *testing.T) {
	cancelled := 0
	b := &Buffer{Max: 10, Keep: First, OnFull: func() { cancelled++ }}
	errs := write(t, b, "abcd", "efgh", "ijk", "l", "mn")
	for i, err := range errs[:2] {
		if err != nil {
			t.Errorf("write %d: %v", i, err)
		}
	}
	for i, err := range errs[2:] {
		if !errors.Is(err, ErrFull) || err.Error() != "output too long: more than 10 bytes" {
			t.Errorf("write %d: got %v, want ErrFull", i+2, err)
		}
	}
	// "l" would fit after the refused "ijk", but the prefix would no
	// longer be the stream's.
	if got := b.String(); got != "abcdefgh" {
		t.Errorf("kept %q, want the first 8 bytes", got)
	}
	if !b.Full() || b.Cut() != 6 || cancelled != 1 {
		t.Errorf("full %v, cut %d, OnFull ran %d times; want true, 6, 1", b.Full(), b.Cut(), cancelled)
	}
}

func TestFirstUpToTheCapIsNotFull(t *testing.T) {
	b := New(4, First)
	write(t, b, "ab", "cd")
	if b.Full() || b.Cut() != 0 || b.String() != "abcd" {
		t.Errorf("full %v, cut %d, kept %q", b.Full(), b.Cut(), b.String())
	}
}

func TestLastKeepsTheEnd(t *testing.T) {
	b := New(5, Last)
	for _, err := range write(t, b, "abc", "defg", "hi") {
		if err != nil {
			t.Fatal(err)
		}
	}
	if b.String() != "efghi" || b.Cut() != 4 || b.Full() {
		t.Errorf("kept %q, cut %d, full %v; want efghi, 4, false", b.String(), b.Cut(), b.Full())
	}
}

func TestFirstAndLastKeepsHalfAtEachEnd(t *testing.T) {
	b := New(8, FirstAndLast)
	write(t, b, "fatal", " error", ": out of ", "memory")
	if got := b.String(); got != "fata"+"mory" {
		t.Errorf("kept %q, want the first 4 and the last 4 bytes", got)
	}
	if total := int64(len("fatal error: out of memory")); b.Cut() != total-8 {
		t.Errorf("cut %d, want %d", b.Cut(), total-8)
	}
}

func TestShortOutputIsKeptWhole(t *testing.T) {
	for _, keep := range []Keep{First, Last, FirstAndLast} {
		b := New(64, keep)
		write(t, b, "one ", "line")
		if b.String() != "one line" || b.Cut() != 0 {
			t.Errorf("keep %d: kept %q, cut %d", keep, b.String(), b.Cut())
		}
	}
}

// io.Copy prefers a writer's ReadFrom: the buffer has none, so the cap
// holds however the bytes arrive.
func TestIOCopyGoesThroughTheCap(t *testing.T) {
	b := New(100, First)
	_, err := io.Copy(b, strings.NewReader(strings.Repeat("x", 1000)))
	if !errors.Is(err, ErrFull) || len(b.Bytes()) > 100 {
		t.Errorf("copy: %v, kept %d bytes", err, len(b.Bytes()))
	}
}

func TestReadersMayReadWhileAProcessWrites(t *testing.T) {
	b := New(1<<10, FirstAndLast)
	var wg sync.WaitGroup
	wg.Go(func() {
		for range 1000 {
			b.Write([]byte("0123456789"))
		}
	})
	for range 100 {
		if n := len(b.String()); n > 1<<10 {
			t.Fatalf("kept %d bytes", n)
		}
	}
	wg.Wait()
	if len(b.String()) != 1<<10 || b.Cut() != 10000-1<<10 {
		t.Errorf("kept %d, cut %d", len(b.String()), b.Cut())
	}
}
