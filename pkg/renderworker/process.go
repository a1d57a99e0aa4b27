package renderworker

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"plumb.dev/pkg/capped"
	"plumb.dev/pkg/render"
)

// exitGrace is how long a worker that closed its pipes, or was asked to
// stop, has to exit before it is killed.
const exitGrace = 2 * time.Second

// stderrBytes is how much of a worker's output the pool keeps: enough for
// the Go runtime's "fatal error" line and what was printed last.
const stderrBytes = 8 << 10

// process is one worker process and the parent's ends of its pipes.
type process struct {
	pool    *Pool
	cmd     *exec.Cmd
	in      *os.File      // requests
	out     *bufio.Reader // answers
	outF    *os.File
	stderr  *capped.Buffer
	renders int
	// idleGen counts the times the worker went idle or was taken, under
	// the pool's lock, so that a timer set when it went idle knows whether
	// it has been idle ever since.
	idleGen int

	// killed is set when the pool killed the worker (its deadline, a
	// broken answer); exited is closed once it has exited, waitErr set.
	killed  atomic.Bool
	exited  chan struct{}
	waitErr error
}

// roundTrip sends req and reads the answer, killing the worker when ctx
// ends first. Any error but the render's own (response.Error) is the
// worker's failure, for which the worker is killed: the caller stops it.
func (w *process) roundTrip(ctx context.Context, req *request, blob [][]byte, maxOutput int64) (*response, []byte, error) {
	type answer struct {
		resp      *response
		manifests []byte
		err       error
	}
	done := make(chan answer, 1)
	go func() {
		if err := writeMessage(w.in, req, blob...); err != nil {
			done <- answer{err: fmt.Errorf("sending the request: %w", err)}
			return
		}
		var resp response
		manifests, err := readMessage(w.out, &resp, maxOutput)
		done <- answer{resp: &resp, manifests: manifests, err: err}
	}()
	select {
	case a := <-done:
		if a.err == nil {
			a.err = checkAnswer(a.resp, a.manifests)
		}
		if a.err != nil {
			if closedByWorker(a.err) {
				// The worker closed its end: it is exiting on its own,
				// and how it exits says why.
				select {
				case <-w.exited:
				case <-time.After(exitGrace):
				}
			}
			w.kill()
			return nil, nil, w.failure(ctx, req, a.err, maxOutput)
		}
		w.renders++
		return a.resp, a.manifests, nil
	case <-ctx.Done():
		// The deadline (or the caller giving up): nothing of this render
		// runs on.
		w.kill()
		<-done
		return nil, nil, w.failure(ctx, req, nil, maxOutput)
	}
}

// closedByWorker reports whether err is the worker's end of a pipe
// closing.
func closedByWorker(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.EPIPE)
}

// checkAnswer refuses an answer that cannot be the render's: manifests
// whose digest is not the one announced, or an error with no message.
func checkAnswer(resp *response, manifests []byte) error {
	if resp.Error != nil {
		if resp.Error.Message == "" {
			return errors.New("an error without a message")
		}
		return nil
	}
	if resp.Digest != digestOf(manifests) {
		return errors.New("manifests that do not match their digest")
	}
	return nil
}

// kill ends the worker and waits until it has exited. killed records
// that the pool ended it, unless it had already exited on its own.
func (w *process) kill() {
	select {
	case <-w.exited:
	default:
		w.killed.Store(true)
	}
	if p := w.cmd.Process; p != nil {
		// The worker's process group: the worker starts nothing, but a
		// render library that forked must not leave a child behind.
		_ = syscall.Kill(-p.Pid, syscall.SIGKILL)
		_ = p.Kill()
	}
	<-w.exited
	closeAll(w.in, w.outF)
}

// stop ends a worker the pool no longer needs: closing its requests ends
// it cleanly, and it is killed if it is still there a moment later.
func (w *process) stop() {
	closeAll(w.in)
	go func() {
		select {
		case <-w.exited:
		case <-time.After(exitGrace):
			w.kill()
		}
		closeAll(w.outF)
	}()
}

// failure is the *render.Error of LimitExceeded for a worker that did not
// answer (it was killed at ctx's end, or exited) or answered garbage
// (cause), naming the limit it passed where one says so. The worker has
// exited.
func (w *process) failure(ctx context.Context, req *request, cause error, maxOutput int64) error {
	<-w.exited
	why := w.why(ctx, req, cause, maxOutput)
	if ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return ctx.Err() // the caller gave up (a shutdown): not the render's fault
	}
	w.pool.opts.Log.Info(w.pool.opts.Names.Worker+" stopped", "reason", why, "exit", exitDescription(w.cmd.ProcessState))
	return render.LimitError("%s", why)
}

// why says why the worker stopped, as the condition message says it, in
// the words of the pool's Names.
func (w *process) why(ctx context.Context, req *request, cause error, maxOutput int64) string {
	n := w.pool.opts.Names
	state := w.cmd.ProcessState
	out := w.stderr.String()
	stoppedBy := "; its " + n.Worker + " was stopped"
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded) && w.killed.Load() && cause == nil:
		return fmt.Sprintf("%s did not finish within its time limit of %s (%s)%s", n.Work, roundDuration(req.Timeout), n.timeout(req), stoppedBy)
	case exitCode(state) == workerExitCPU || signalOf(state) == syscall.SIGXCPU:
		return fmt.Sprintf("%s used more CPU time than its limit of %s (%s)%s", n.Work, roundDuration(req.Timeout), n.timeout(req), stoppedBy)
	case strings.Contains(out, "out of memory") || strings.Contains(out, "cannot allocate memory"):
		return fmt.Sprintf("%s passed its memory limit of %d MiB (%s)%s", n.Work, w.pool.opts.Memory>>20, n.Memory, stoppedBy)
	case strings.Contains(out, "stack exceeds") || strings.Contains(out, "stack overflow"):
		return fmt.Sprintf("%s passed its stack limit of %d MiB: a template, value or Jsonnet function that recurses without end (a value holding itself, a tailstrict call)%s", n.Work, maxStackBytes>>20, stoppedBy)
	case errors.Is(cause, errFrameTooLarge):
		if req.ChartPlan != nil || req.ChartPackage != nil {
			return fmt.Sprintf("the packaged chart passes the limit of %d bytes%s", maxOutput, stoppedBy)
		}
		return fmt.Sprintf("the rendered manifests pass the limit of %d bytes (--max-rendered-size)%s", maxOutput, stoppedBy)
	case signalOf(state) == syscall.SIGKILL && !w.killed.Load():
		return fmt.Sprintf("the %s was killed by the system (SIGKILL: most likely the memory limit of %s's container)", n.Worker, n.Program)
	case cause != nil && w.killed.Load():
		// It was alive when its answer broke: the answer itself was bad.
		return fmt.Sprintf("the %s answered with a broken message (%v)%s", n.Worker, cause, stoppedBy)
	}
	return fmt.Sprintf("the %s exited (%s) before it answered", n.Worker, exitDescription(state))
}

func exitCode(state *os.ProcessState) int {
	if state == nil {
		return -1
	}
	return state.ExitCode()
}

func signalOf(state *os.ProcessState) syscall.Signal {
	if state == nil {
		return 0
	}
	if ws, ok := state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return ws.Signal()
	}
	return 0
}

func exitDescription(state *os.ProcessState) string {
	if state == nil {
		return "not started"
	}
	if sig := signalOf(state); sig != 0 {
		return "signal " + sig.String()
	}
	return fmt.Sprintf("exit status %d", state.ExitCode())
}

// roundDuration prints d as a limit is set: whole seconds from a second up.
func roundDuration(d time.Duration) time.Duration {
	if d >= time.Second {
		return d.Round(time.Second)
	}
	return d.Round(time.Millisecond)
}
