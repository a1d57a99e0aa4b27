package localenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Process is a child program: a controller or kube-controller-manager. Its
// output goes to a log file, appended across restarts.
type Process struct {
	Name    string
	Path    string
	Args    []string
	Env     []string
	LogPath string
	// Detached processes outlive the launcher (no parent-death signal).
	Detached bool

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// Start starts the process. It runs in its own process group, so a Ctrl-C
// at the terminal reaches only the launcher, which stops the children in
// order; and it is killed if the launcher dies.
func (p *Process) Start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		select {
		case <-p.done:
		default:
			return fmt.Errorf("%s is running already", p.Name)
		}
	}
	logFile, err := os.OpenFile(p.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(p.Path, p.Args...)
	cmd.Env = append(os.Environ(), p.Env...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
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
	p.cmd, p.done, p.err = cmd, done, nil
	go func() {
		err := cmd.Wait()
		logFile.Close()
		p.mu.Lock()
		p.err = err
		p.mu.Unlock()
		close(done)
	}()
	return nil
}

// Running reports whether the process was started and has not exited.
func (p *Process) Running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
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
// process to be gone.
func (p *Process) Kill() error {
	return p.signal(syscall.SIGKILL, 0)
}

// Stop asks the process to end with SIGTERM and kills it when it has not
// ended within grace.
func (p *Process) Stop(grace time.Duration) error {
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

// freeAddr returns 127.0.0.1:<port> with a port that was free a moment ago.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// waitHTTP polls url until it answers 200, the process exits or ctx ends.
func waitHTTP(ctx context.Context, url string, p *Process) error {
	client := &http.Client{Timeout: 2 * time.Second}
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		if resp, err := client.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if p != nil {
			if done, exitErr := p.Exited(); isClosed(done) {
				return fmt.Errorf("%s exited (%v); the end of its log:\n%s", p.Name, exitErr(), Tail(p.LogPath, 15))
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", url, ctx.Err())
		case <-tick.C:
		}
	}
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
	pids, err := childPids(os.Getpid())
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

// childPids lists the processes whose parent is ppid, from /proc.
func childPids(ppid int) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var out []int
	for _, ent := range entries {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", ent.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...; comm may hold spaces, so read after ')'.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(string(stat[i+1:]))
		if len(fields) > 1 && fields[1] == strconv.Itoa(ppid) {
			out = append(out, pid)
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
