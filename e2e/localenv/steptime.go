package localenv

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// stepTimes records how long each step of a start or a stop took, for the
// one progress line that says where the time went (docs/design/node.md,
// "Time in the tests").
type stepTimes struct {
	began, last time.Time
	steps       []string
}

func newStepTimes() *stepTimes {
	now := time.Now()
	return &stepTimes{began: now, last: now}
}

// done ends the step named name, begun when the previous one ended.
func (s *stepTimes) done(name string) {
	now := time.Now()
	s.steps = append(s.steps, fmt.Sprintf("%s %s", name, now.Sub(s.last).Round(100*time.Millisecond)))
	s.last = now
}

// String is the total and each step, as "7.9s: containerd 0.4s, …".
func (s *stepTimes) String() string {
	return fmt.Sprintf("%s: %s", time.Since(s.began).Round(100*time.Millisecond), strings.Join(s.steps, ", "))
}

// Stamped is a progress writer (Options.Progress) that writes each line
// to w after prefix and the seconds since it was made, so a slow step
// shows in a test's output.
func Stamped(w io.Writer, prefix string) io.Writer {
	return &stamped{w: w, prefix: prefix, began: time.Now()}
}

type stamped struct {
	w      io.Writer
	prefix string
	began  time.Time
}

func (s *stamped) Write(p []byte) (int, error) {
	_, err := fmt.Fprintf(s.w, "%s%6.1fs %s\n", s.prefix, time.Since(s.began).Seconds(), strings.TrimRight(string(p), "\n"))
	return len(p), err
}
