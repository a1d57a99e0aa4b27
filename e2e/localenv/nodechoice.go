package localenv

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// NodeAuto asks for a real node when this machine can start one now, and
// the pod simulator otherwise (`make run`'s default): Start decides once,
// before the control plane, and says why in one line when it falls back.
const NodeAuto = "auto"

// nodeFacts are what decides whether a real node can start on this
// machine now. probeNode gathers them; chooseNode judges them without
// touching the machine, so each reason has a test of its own.
type nodeFacts struct {
	// Root: containerd, runc and the CNI plugins make mounts, cgroups,
	// network namespaces and iptables rules.
	Root bool
	// Missing are the binaries and commands a real node needs that are
	// not there (`make node-assets` builds and installs them).
	Missing []string
	// Cgroups is why the kubelet could not make its Pods' cgroups, ""
	// when it can.
	Cgroups string
	// BridgeNetfilter: the kernel's br_netfilter, without which Services
	// between Pods on the bridge do not work.
	BridgeNetfilter bool
	// Disk is why the node's folder has too little free space, "" when
	// it has enough (checkFreeDisk).
	Disk string
	// LockHeld: another environment's real node holds nodeLock. A
	// launcher that may fall back does not wait for it.
	LockHeld bool
}

// unavailable says why no real node can start here whatever the other
// environments do, or nil: what NodeUnavailable reports and a test skips
// with.
func (f nodeFacts) unavailable() error {
	switch {
	case !f.Root:
		return errors.New("a real node needs root: containerd, runc and the CNI plugins make mounts, cgroups, network namespaces and iptables rules")
	case len(f.Missing) > 0:
		return fmt.Errorf("a real node needs (run `make node-assets`):\n  %s", strings.Join(f.Missing, "\n  "))
	case f.Cgroups != "":
		return fmt.Errorf("a real node needs cgroups the kubelet can write: %s", f.Cgroups)
	case !f.BridgeNetfilter:
		return errors.New("a real node needs the kernel's br_netfilter (/proc/sys/net/bridge): Services between Pods on the bridge go through iptables")
	}
	return nil
}

// chooseNode is the node an environment that may fall back runs: NodeReal
// when f allows one, else NodeSimulated and why not, in one line.
func chooseNode(f nodeFacts) (node, reason string) {
	if err := f.unavailable(); err != nil {
		// The list of missing binaries, on one line.
		return NodeSimulated, strings.Join(strings.Fields(err.Error()), " ")
	}
	if f.Disk != "" {
		return NodeSimulated, f.Disk
	}
	if f.LockHeld {
		return NodeSimulated, "another environment runs the machine's one real node (" + nodeLock + " is locked)"
	}
	return NodeReal, ""
}

// probeNode gathers the facts about this machine that do not depend on
// other environments: every field but LockHeld.
func probeNode(binDir, assetsDir string) nodeFacts {
	f := nodeFacts{Root: os.Geteuid() == 0}
	for _, name := range []string{"containerd", "containerd-shim-runc-v2", "runc", "crictl", "bridge", "host-local", "loopback", "portmap", "coredns"} {
		if _, err := os.Stat(filepath.Join(binDir, name)); err != nil {
			f.Missing = append(f.Missing, filepath.Join(binDir, name))
		}
	}
	for _, name := range []string{"kubelet", "kube-proxy", "kube-scheduler"} {
		if _, err := os.Stat(filepath.Join(assetsDir, name)); err != nil {
			f.Missing = append(f.Missing, filepath.Join(assetsDir, name))
		}
	}
	for _, name := range []string{"iptables", "ip"} {
		if _, err := exec.LookPath(name); err != nil {
			f.Missing = append(f.Missing, name+" (Debian's iptables, iproute2)")
		}
	}
	f.Cgroups = cgroupProblem("/sys/fs/cgroup")
	_, err := os.Stat("/proc/sys/net/bridge/bridge-nf-call-iptables")
	f.BridgeNetfilter = err == nil
	if err := checkFreeDisk(os.TempDir(), MinFreeDisk); err != nil {
		f.Disk = err.Error()
	}
	return f
}

// kubeletCgroups are the controllers the kubelet and runc need for a
// Pod's requests and limits.
var kubeletCgroups = []string{"cpu", "memory", "pids"}

// cgroupProblem says why the kubelet could not make its cgroups under
// root (the cgroup file system's mount point), or "" when it can: a
// cgroup v2 hierarchy with the controllers enabled, or cgroup v1 with a
// hierarchy per controller, writable (not a read-only mount, as a
// container's often is).
func cgroupProblem(root string) string {
	dirs := []string{root}
	if data, err := os.ReadFile(filepath.Join(root, "cgroup.controllers")); err == nil {
		have := strings.Fields(string(data))
		for _, c := range kubeletCgroups {
			if !slices.Contains(have, c) {
				return fmt.Sprintf("cgroup v2 at %s has no %s controller (it has: %s)", root, c, strings.Join(have, " "))
			}
		}
	} else {
		dirs = nil
		for _, c := range kubeletCgroups {
			dir := filepath.Join(root, c)
			if st, err := os.Stat(dir); err != nil || !st.IsDir() {
				return fmt.Sprintf("no cgroup v2 at %s and no cgroup v1 hierarchy for %s at %s", root, c, dir)
			}
			dirs = append(dirs, dir)
		}
	}
	for _, dir := range dirs {
		if err := syscall.Access(dir, 2 /* W_OK */); err != nil {
			return fmt.Sprintf("%s is not writable: %v", dir, err)
		}
	}
	return ""
}

// tryNodeLock takes the machine's one real node for this environment if
// no other environment holds it, without waiting: nil, nil when one does.
func tryNodeLock() (*os.File, error) {
	f, err := os.OpenFile(nodeLock, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, nil
		}
		return nil, fmt.Errorf("locking %s: %w", nodeLock, err)
	}
	return f, nil
}

// resolveNode turns Options.Node NodeAuto into the node this environment
// runs, once, before anything starts: a real node when the machine allows
// one and no other environment holds it (its lock then held until the
// node stops), else the pod simulator, with one progress line saying why
// and how to get the node. With Options.NetworkPolicies there is no
// falling back: the simulator enforces nothing.
func (e *Env) resolveNode() error {
	if e.opts.Node != NodeAuto {
		return nil
	}
	f := probeNode(e.opts.NodeBinDir, e.opts.AssetsDir)
	if f.unavailable() == nil && f.Disk == "" {
		lock, err := tryNodeLock()
		if err != nil {
			return err
		}
		f.LockHeld = lock == nil
		e.heldNodeLock = lock
	}
	node, reason := chooseNode(f)
	e.opts.Node, e.NodeFallback = node, reason
	if node == NodeReal {
		return nil
	}
	if e.opts.NetworkPolicies {
		return fmt.Errorf("NetworkPolicies are enforced only on a real node, and none can start here: %s", reason)
	}
	e.progress("no real node: %s; running the pod simulator instead (`make node-assets` builds the node; `make run NODE=sim` asks for the simulator, NODE=real for the node)", reason)
	return nil
}
