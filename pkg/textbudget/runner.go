package textbudget

import (
	"errors"
	"fmt"
	"strings"
	"text/template"
	"time"

	"plumb.dev/pkg/capped"
)

// ErrTooLong is the error of an output over its bound.
var ErrTooLong = capped.ErrFull

// Runner executes templates with a timeout, at most Slots at once.
type Runner struct {
	timeout time.Duration
	running chan struct{}
}

// NewRunner is a runner of at most slots executions at once, each cut at
// timeout.
func NewRunner(slots int, timeout time.Duration) *Runner {
	return &Runner{timeout: timeout, running: make(chan struct{}, slots)}
}

// Timeout is the runner's execution timeout.
func (r *Runner) Timeout() time.Duration { return r.timeout }

// Execute runs tmpl (parsed with Funcs) over data, its output cut at
// limit bytes (an error wrapping ErrTooLong), the text its functions
// build at maxBuilt bytes, and its time at the runner's timeout. A
// template still running at the timeout is left to finish in its
// goroutine, holding one slot: its shape (checked by the caller at
// parse time) and its budget bound its work. Errors drop text/template's
// "template: " prefix.
func (r *Runner) Execute(tmpl *template.Template, data any, limit, maxBuilt int) (string, error) {
	timer := time.NewTimer(r.timeout)
	defer timer.Stop()
	select {
	case r.running <- struct{}{}:
	case <-timer.C:
		return "", fmt.Errorf("no template could run within %s (%d still running)", r.timeout, cap(r.running))
	}
	run, err := tmpl.Clone()
	if err != nil {
		<-r.running
		return "", err
	}
	run.Funcs(NewBudget(maxBuilt).Funcs())
	type result struct {
		out string
		err error
	}
	done := make(chan result, 1)
	go func() {
		defer func() { <-r.running }()
		defer func() {
			if p := recover(); p != nil {
				done <- result{err: fmt.Errorf("the template panicked: %v", p)}
			}
		}()
		w := capped.New(limit, capped.First)
		err := run.Execute(w, data)
		done <- result{w.String(), err}
	}()
	select {
	case res := <-done:
		if res.err != nil {
			return "", CleanError(res.err)
		}
		return res.out, nil
	case <-timer.C:
		return "", fmt.Errorf("the template ran longer than %s", r.timeout)
	}
}

// CleanError drops text/template's "template: name:1:2: executing ..."
// prefix down to what went wrong and where.
func CleanError(err error) error {
	if errors.Is(err, ErrTooLong) {
		return err
	}
	return errors.New(strings.TrimPrefix(err.Error(), "template: "))
}
