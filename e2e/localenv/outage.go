package localenv

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Outages of the dependencies the controllers cannot do without: the API
// server, etcd and NATS, each stopped and started again on the same
// address and the same data, as a rollout or a crash of one of them
// would (docs/design/scale.md, "Outages"). The controllers keep running
// meanwhile; the e2e outage tests check what they do about it.

// StopAPIServer stops kube-apiserver (SIGTERM, as a rollout would); etcd
// and everything else keep running.
func (e *Env) StopAPIServer() error {
	if e.control == nil {
		return errors.New("no control plane")
	}
	e.progress("stopping kube-apiserver")
	if err := endChild("kube-apiserver", "--secure-port="+e.control.ControlPlane.APIServer.SecureServing.Port, stopGrace); err != nil {
		return err
	}
	// envtest notes the exit and forgets the process, so that Start
	// starts a new one.
	if err := e.control.ControlPlane.APIServer.Stop(); err != nil {
		return fmt.Errorf("stopping kube-apiserver: %w", err)
	}
	return nil
}

// stopGrace is how long a stopped control-plane process has to exit after
// SIGTERM before it is killed: kube-apiserver drains its requests for up
// to a minute, longer than an outage story needs.
const stopGrace = 10 * time.Second

// endChild ends the control-plane process named comm whose command line
// has the argument arg, a child of this process as envtest starts them:
// SIGTERM, and SIGKILL after grace, as a kubelet ends a container; it
// returns once the process is gone. The argument tells this environment's
// process from another's: a test process may run several environments
// (e2e's shared node environments beside its own), each with a
// kube-apiserver and an etcd of its own.
func endChild(comm, arg string, grace time.Duration) error {
	pids, err := ChildPids(os.Getpid())
	if err != nil {
		return err
	}
	pid := 0
	for _, p := range pids {
		name, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", p))
		if err != nil || strings.TrimSpace(string(name)) != comm {
			continue
		}
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p))
		if err == nil && slices.Contains(strings.Split(string(cmdline), "\x00"), arg) {
			pid = p
			break
		}
	}
	if pid == 0 {
		return fmt.Errorf("no %s process with %s runs", comm, arg)
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		return fmt.Errorf("ending %s: %w", comm, err)
	}
	killAt := time.Now().Add(grace)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(killAt) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// envtest's waiter, which reaped it, marks it exited just after.
	time.Sleep(200 * time.Millisecond)
	return nil
}

// StartAPIServer starts kube-apiserver again on the same port, with the
// same certificates and etcd, and waits until it answers /healthz.
func (e *Env) StartAPIServer() error {
	if e.control == nil {
		return errors.New("no control plane")
	}
	e.progress("starting kube-apiserver again")
	if err := e.control.ControlPlane.APIServer.Start(); err != nil {
		return fmt.Errorf("starting kube-apiserver again: %w", err)
	}
	return e.restartReaper()
}

// RestartEtcd stops etcd and starts it again on the same port and data
// folder, waiting until it answers /health. kube-apiserver keeps running
// and reconnects.
func (e *Env) RestartEtcd() error {
	if e.control == nil {
		return errors.New("no control plane")
	}
	etcd := e.control.ControlPlane.Etcd
	e.progress("restarting etcd")
	if err := endChild("etcd", "--data-dir="+etcd.DataDir, stopGrace); err != nil {
		return err
	}
	if err := etcd.Stop(); err != nil {
		return fmt.Errorf("stopping etcd: %w", err)
	}
	if err := etcd.Start(); err != nil {
		return fmt.Errorf("starting etcd again: %w", err)
	}
	return e.restartReaper()
}

// StopNATS shuts the NATS server down; its JetStream store stays on disk.
func (e *Env) StopNATS() {
	e.progress("stopping NATS")
	e.NATS.Shutdown()
	e.NATS.WaitForShutdown()
}

// StartNATS starts NATS again on the URL the controllers were given, with
// the same JetStream store, and waits until it takes connections.
func (e *Env) StartNATS() error {
	e.progress("starting NATS again")
	return e.serveNATS(e.natsPort)
}

// restartReaper starts the reaper again with the processes that run now:
// the old one would kill the pids of the stopped ones.
func (e *Env) restartReaper() error {
	if e.reaper != nil {
		_ = e.reaper.Kill()
	}
	return e.startReaper()
}
