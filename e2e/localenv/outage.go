package localenv

import (
	"errors"
	"fmt"
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
	if err := e.control.ControlPlane.APIServer.Stop(); err != nil {
		return fmt.Errorf("stopping kube-apiserver: %w", err)
	}
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
