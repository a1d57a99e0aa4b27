package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/procfs"
)

// buildController builds the sync-controller binary into dir.
func buildController(root, dir string) (string, error) {
	out := filepath.Join(dir, "sync-controller")
	cmd := exec.Command("go", "build", "-o", out, "./sync-controller")
	cmd.Dir = root
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("building sync-controller: %w", err)
	}
	return out, nil
}

// process is the sync-controller binary running on its own, with its
// resident memory sampled.
type process struct {
	cmd     *exec.Cmd
	log     string
	done    chan error
	stopped chan struct{}

	mu     sync.Mutex
	maxRSS int64 // KiB, from sampling VmRSS
}

// startProcess runs the binary against the API server of kubeconfig and the
// NATS server, with main.go's defaults otherwise; its log goes to logPath.
func startProcess(binary, kubeconfig, natsURL, logPath string, extra ...string) (*process, error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	args := append([]string{"--metrics-addr=0", "--health-addr=0", "--nats-url=" + natsURL, "--enable-leader-election=false"}, extra...)
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, err
	}
	p := &process{cmd: cmd, log: logPath, done: make(chan error, 1), stopped: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		logFile.Close()
		p.done <- err
		close(p.stopped)
	}()
	go p.sample(20 * time.Millisecond)
	return p, nil
}

// sample keeps the largest VmRSS seen, as a cross-check of VmHWM.
func (p *process) sample(every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-p.stopped:
			return
		case <-t.C:
			if rss, _, err := p.memory(); err == nil {
				p.mu.Lock()
				p.maxRSS = max(p.maxRSS, rss)
				p.mu.Unlock()
			}
		}
	}
}

// memory returns VmRSS and VmHWM in KiB from /proc.
func (p *process) memory() (rss, hwm int64, err error) {
	s, err := p.status()
	return kib(s.VmRSS), kib(s.VmHWM), err
}

// status reads /proc/<pid>/status: VmRSS, VmHWM, RssAnon (heap, stacks),
// RssFile (the mapped binary's pages), in bytes.
func (p *process) status() (procfs.ProcStatus, error) {
	proc, err := procfs.NewProc(p.cmd.Process.Pid)
	if err != nil {
		return procfs.ProcStatus{}, err
	}
	return proc.NewStatus()
}

// kib converts procfs's bytes to the KiB the figures are kept in.
func kib(bytes uint64) int64 { return int64(bytes / 1024) }

func (p *process) sampledMax() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.maxRSS
}

// alive returns an error when the process has exited.
func (p *process) alive() error {
	select {
	case <-p.stopped:
		return fmt.Errorf("sync-controller exited; see %s", p.log)
	default:
		return nil
	}
}

// stop sends SIGTERM and waits, then kills after the timeout.
func (p *process) stop(timeout time.Duration) error {
	select {
	case <-p.stopped:
		return nil
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	select {
	case <-p.stopped:
		return nil
	case <-ctx.Done():
		_ = p.cmd.Process.Kill()
		<-p.stopped
		return fmt.Errorf("sync-controller did not stop within %s of SIGTERM; killed", timeout)
	}
}
