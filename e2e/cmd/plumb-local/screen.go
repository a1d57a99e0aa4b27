package main

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/term"
)

// screen keeps a block of status lines at the bottom of a terminal and
// prints everything else above it. Without a terminal (output to a file or
// a pipe) it prints a status line only when it changed, with the time.
type screen struct {
	mu    sync.Mutex
	out   *os.File
	tty   bool
	block []string
	last  map[string]string
}

func newScreen(out *os.File) *screen {
	return &screen{out: out, tty: term.IsTerminal(int(out.Fd())), last: map[string]string{}}
}

// Write prints p above the status block.
func (s *screen) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clear()
	n, err := s.out.Write(p)
	s.draw()
	return n, err
}

// Printf prints above the status block.
func (s *screen) Printf(format string, args ...any) {
	_, _ = fmt.Fprintf(s, format, args...)
}

// SetBlock replaces the status block.
func (s *screen) SetBlock(lines []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.tty {
		for i, l := range lines {
			if i == 0 {
				continue // the header carries only the time
			}
			key := strings.Join(strings.Fields(l)[:min(2, len(strings.Fields(l)))], " ")
			if s.last[key] != l {
				s.last[key] = l
				fmt.Fprintf(s.out, "%s  %s\n", time.Now().Format("15:04:05"), l)
			}
		}
		return
	}
	s.clear()
	s.block = lines
	s.draw()
}

func (s *screen) clear() {
	if !s.tty {
		return
	}
	for range s.block {
		fmt.Fprint(s.out, "\x1b[1A\x1b[2K")
	}
}

func (s *screen) draw() {
	if !s.tty {
		return
	}
	width := 120
	if w, _, err := term.GetSize(int(s.out.Fd())); err == nil && w > 0 {
		width = w
	}
	for _, l := range s.block {
		fmt.Fprintln(s.out, cut(strings.ReplaceAll(l, "\n", " "), width-1))
	}
}

// cut shortens a line to width runes so that it never wraps, which would
// throw off the count of lines to clear.
func cut(s string, width int) string {
	if utf8.RuneCountInString(s) <= width {
		return s
	}
	r := []rune(s)
	return string(r[:max(0, width-1)]) + "…"
}
