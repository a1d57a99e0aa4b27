package localenv

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/procfs"
)

// Process is a child program: a controller or kube-controller-manager. Its
// output goes to a log file, appended across restarts.
type Process struct {
	Name    string
	Path    string
	Args    []string
	Env     []string
	LogPath string
	// ExtraFiles are handed to the process as file descriptors 3, 4, …
	// (the listening sockets of plumb.dev/pkg/listen's fd:N addresses);
	// the caller keeps them open across restarts and closes them.
	ExtraFiles []*os.File
	// Detached processes outlive the launcher (no parent-death signal).
	Detached bool
	// Supervised processes are started again when they exit without
	// Stop, after a backoff of 1s, 2s, 4s … up to MaxBackoff, as a
	// Deployment's Pod would be; the backoff starts over after a run
	// longer than a minute.
	Supervised bool

	mu      sync.Mutex
	cmd     *exec.Cmd
	done    chan struct{}
	err     error
	started time.Time
	// stopped is set by Stop: the supervisor does not start it again.
	stopped     bool
	supervising bool
	// kick, while the supervisor waits out a backoff, starts it at once.
	kick     chan struct{}
	restarts int
	lastExit string
}

// MaxBackoff caps the wait before a supervised process is started again.
const MaxBackoff = 30 * time.Second

// Start starts the process (and, when Supervised, its supervisor). It runs
// in its own process group, so a Ctrl-C at the terminal reaches only the
// launcher, which stops the children in order; and it is killed if the
// launcher dies.
func (p *Process) Start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.runningLocked() {
		return fmt.Errorf("%s is running already", p.Name)
	}
	if p.kick != nil {
		// The supervisor is waiting out a backoff: start now instead.
		close(p.kick)
		p.kick = nil
	}
	p.stopped = false
	if err := p.startLocked(); err != nil {
		return err
	}
	if p.Supervised && !p.supervising {
		p.supervising = true
		go p.supervise()
	}
	return nil
}

func (p *Process) runningLocked() bool {
	if p.cmd == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

func (p *Process) startLocked() error {
	logFile, err := os.OpenFile(p.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(p.Path, p.Args...)
	cmd.Env = append(os.Environ(), p.Env...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.ExtraFiles = p.ExtraFiles
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if p.Detached {
		cmd.SysProcAttr.Pdeathsig = 0
	}
	fmt.Fprintf(logFile, "==== %s starting %s %v\n", time.Now().Format(time.RFC3339), p.Path, p.Args)
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("starting %s: %w", p.Name, err)
	}
	done := make(chan struct{})
	p.cmd, p.done, p.err, p.started = cmd, done, nil, time.Now()
	go func() {
		err := cmd.Wait()
		fmt.Fprintf(logFile, "==== %s %s exited: %v\n", time.Now().Format(time.RFC3339), p.Name, exitText(err))
		logFile.Close()
		p.mu.Lock()
		p.err = err
		p.mu.Unlock()
		close(done)
	}()
	return nil
}

func exitText(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

// supervise starts the process again each time it exits without Stop.
func (p *Process) supervise() {
	backoff := time.Second
	for {
		p.mu.Lock()
		done := p.done
		p.mu.Unlock()
		<-done
		p.mu.Lock()
		if p.done != done { // started again meanwhile (Start)
			p.mu.Unlock()
			continue
		}
		if p.stopped {
			p.supervising = false
			p.mu.Unlock()
			return
		}
		if time.Since(p.started) > time.Minute {
			backoff = time.Second
		}
		wait := backoff
		backoff = min(2*backoff, MaxBackoff)
		p.lastExit = fmt.Sprintf("%s at %s", exitText(p.err), time.Now().Format("15:04:05"))
		kick := make(chan struct{})
		p.kick = kick
		p.mu.Unlock()

		select {
		case <-time.After(wait):
		case <-kick:
		}
		p.mu.Lock()
		if p.kick == kick {
			p.kick = nil
		}
		if p.stopped {
			p.supervising = false
			p.mu.Unlock()
			return
		}
		if !p.runningLocked() {
			p.restarts++
			if err := p.startLocked(); err != nil {
				// Counted as one more exit; try again after the backoff.
				p.err = err
				closed := make(chan struct{})
				close(closed)
				p.done = closed
			}
		}
		p.mu.Unlock()
	}
}

// Status says whether the process runs, how often the supervisor started
// it again after an exit and how it last exited ("" before any exit).
func (p *Process) Status() (running bool, restarts int, lastExit string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.runningLocked(), p.restarts, p.lastExit
}

// Running reports whether the process was started and has not exited.
func (p *Process) Running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.runningLocked()
}

// Exited returns a channel closed when the running process exits, and the
// error it exited with once it has.
func (p *Process) Exited() (<-chan struct{}, func() error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	done := p.done
	if done == nil {
		c := make(chan struct{})
		close(c)
		done = c
	}
	return done, func() error { p.mu.Lock(); defer p.mu.Unlock(); return p.err }
}

// Pid returns the process id, 0 when not started.
func (p *Process) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// Kill sends SIGKILL, as a crash or an OOM kill would, and waits for the
// process to be gone. A supervised process is started again after its
// backoff, as a crashed Pod would be (Start starts it at once).
func (p *Process) Kill() error {
	return p.signal(syscall.SIGKILL, 0)
}

// Stop asks the process to end with SIGTERM and kills it when it has not
// ended within grace; it is not started again.
func (p *Process) Stop(grace time.Duration) error {
	p.mu.Lock()
	p.stopped = true
	if p.kick != nil {
		close(p.kick)
		p.kick = nil
	}
	p.mu.Unlock()
	return p.signal(syscall.SIGTERM, grace)
}

func (p *Process) signal(sig syscall.Signal, grace time.Duration) error {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil {
		return nil
	}
	select {
	case <-done:
		return nil
	default:
	}
	if err := cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("signalling %s: %w", p.Name, err)
	}
	if sig != syscall.SIGKILL {
		select {
		case <-done:
			return nil
		case <-time.After(grace):
			_ = cmd.Process.Kill()
		}
	}
	select {
	case <-done:
		return nil
	case <-time.After(30 * time.Second):
		return fmt.Errorf("%s (pid %d) did not exit", p.Name, cmd.Process.Pid)
	}
}

// reserve binds a port on 127.0.0.1 and returns its address and the
// listening socket as a file to hand to a child process: the port is held
// from now until the file is closed, whichever process serves it.
func reserve() (string, *os.File, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	defer l.Close()
	f, err := l.(*net.TCPListener).File()
	if err != nil {
		return "", nil, err
	}
	return l.Addr().String(), f, nil
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// startReaper starts a small shell process, outside this process's group,
// that waits for this process to end and then kills the given children and
// removes the state folder. Stop ends the reaper first; it acts only when the
// launcher died without Stop (a crash, a test binary killed at its timeout).
func (e *Env) startReaper() error {
	pids, err := ChildPids(os.Getpid())
	if err != nil || len(pids) == 0 {
		return err
	}
	list := ""
	for _, pid := range pids {
		list += fmt.Sprintf(" %d", pid)
	}
	script := fmt.Sprintf("while kill -0 %d 2>/dev/null; do sleep 1; done; kill -9%s 2>/dev/null; sleep 1; rm -rf %q",
		os.Getpid(), list, e.StateDir)
	e.reaper = &Process{Name: "reaper", Path: "/bin/sh", Args: []string{"-c", script}, LogPath: os.DevNull, Detached: true}
	return e.reaper.Start()
}

// ChildPids lists the processes whose parent is ppid, from /proc.
func ChildPids(ppid int) ([]int, error) {
	procs, err := procfs.AllProcs()
	if err != nil {
		return nil, err
	}
	var out []int
	for _, p := range procs {
		stat, err := p.Stat()
		if err != nil {
			continue // gone since the listing
		}
		if stat.PPID == ppid {
			out = append(out, p.PID)
		}
	}
	return out, nil
}

// Tail returns the last n lines of a file, for error messages about a
// process whose log is about to be removed with the state folder.
func Tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "    " + strings.Join(lines, "\n    ")
}
