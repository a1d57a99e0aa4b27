// Package capped holds a bounded part of an unbounded stream of bytes — a
// child process's stdout or stderr, a template's output — and says how
// much of it was cut.
//
// A Buffer keeps at most its cap, in one of three ways:
//
//   - First keeps a prefix and refuses the write that would pass the cap
//     (and every write after it) with an error wrapping ErrFull. A
//     command's stdout or a template's output, where anything past the
//     cap is a failure, stops there: exec's copy and text/template both
//     give up at a write's error. OnFull runs once at that write, to
//     cancel the writer.
//   - Last keeps the last bytes: a command's stderr, whose final lines
//     say why it failed.
//   - FirstAndLast keeps half at each end: a Go program's "fatal error"
//     line comes first, what a library printed last comes after it.
//
// Last and FirstAndLast never fail a write, so a chatty process is never
// blocked or broken by its log. A Buffer is safe for one writer and
// readers in other goroutines (exec copies a pipe in its own goroutine
// while the caller reads what was kept); it holds its bytes in unexported
// fields, so io.Copy cannot reach past Write through a ReadFrom.
package capped
