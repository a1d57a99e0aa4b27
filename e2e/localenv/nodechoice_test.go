package localenv

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// A machine that has everything a real node needs, for the choice's
// tests to take one thing away from.
func capableMachine() nodeFacts {
	return nodeFacts{Root: true, BridgeNetfilter: true}
}

// Each reason a real node cannot start here gives the simulator, with a
// one-line reason that names the cause and, where there is one, the fix;
// a capable machine whose node nobody holds gets the real node.
func TestAutoChoosesTheSimulatorForEachReasonANodeCannotStart(t *testing.T) {
	for _, tc := range []struct {
		name  string
		facts func(*nodeFacts)
		// want is in the reason; "" expects the real node.
		want []string
	}{
		{name: "a capable machine", facts: func(*nodeFacts) {}},
		{name: "not root", facts: func(f *nodeFacts) { f.Root = false }, want: []string{"needs root"}},
		{name: "binaries missing", facts: func(f *nodeFacts) { f.Missing = []string{"bin/node/containerd", "bin/k8s/kubelet"} },
			want: []string{"make node-assets", "bin/node/containerd", "bin/k8s/kubelet"}},
		{name: "cgroups not writable", facts: func(f *nodeFacts) { f.Cgroups = "/sys/fs/cgroup/memory is not writable: read-only file system" },
			want: []string{"cgroups", "/sys/fs/cgroup/memory is not writable"}},
		{name: "no br_netfilter", facts: func(f *nodeFacts) { f.BridgeNetfilter = false }, want: []string{"br_netfilter"}},
		{name: "a full disk", facts: func(f *nodeFacts) {
			f.Disk = "a real node needs 10.0 GiB free on the file system of /tmp and it has 2.0 GiB"
		},
			want: []string{"10.0 GiB free", "2.0 GiB"}},
		{name: "another environment's node", facts: func(f *nodeFacts) { f.LockHeld = true }, want: []string{nodeLock, "another environment"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			f := capableMachine()
			tc.facts(&f)
			node, reason := chooseNode(f)
			if tc.want == nil {
				g.Expect(node).To(Equal(NodeReal))
				g.Expect(reason).To(BeEmpty())
				return
			}
			g.Expect(node).To(Equal(NodeSimulated))
			g.Expect(reason).NotTo(ContainSubstring("\n"), "one line")
			for _, w := range tc.want {
				g.Expect(reason).To(ContainSubstring(w))
			}
		})
	}
}

// Without a real node's prerequisites no lock is asked for: a machine
// that cannot run a node never names another environment as the reason.
func TestAutoNamesTheMachinesReasonBeforeTheLock(t *testing.T) {
	g := NewWithT(t)
	f := capableMachine()
	f.Root, f.LockHeld = false, true
	_, reason := chooseNode(f)
	g.Expect(reason).To(ContainSubstring("root"))
	g.Expect(reason).NotTo(ContainSubstring(nodeLock))
}

// The cgroup probe accepts a v2 hierarchy with the kubelet's controllers
// and v1 hierarchies per controller, and names what is missing.
func TestTheCgroupProbeNamesAMissingController(t *testing.T) {
	g := NewWithT(t)
	v2 := t.TempDir()
	g.Expect(os.WriteFile(filepath.Join(v2, "cgroup.controllers"), []byte("cpuset cpu io memory pids\n"), 0o644)).To(Succeed())
	g.Expect(cgroupProblem(v2)).To(BeEmpty())
	g.Expect(os.WriteFile(filepath.Join(v2, "cgroup.controllers"), []byte("hugetlb\n"), 0o644)).To(Succeed())
	g.Expect(cgroupProblem(v2)).To(And(ContainSubstring("cgroup v2"), ContainSubstring("no cpu controller"), ContainSubstring("hugetlb")))

	v1 := t.TempDir()
	for _, c := range []string{"cpu", "memory"} {
		g.Expect(os.Mkdir(filepath.Join(v1, c), 0o755)).To(Succeed())
	}
	g.Expect(cgroupProblem(v1)).To(ContainSubstring("no cgroup v1 hierarchy for pids at " + filepath.Join(v1, "pids")))
	g.Expect(os.Mkdir(filepath.Join(v1, "pids"), 0o755)).To(Succeed())
	g.Expect(cgroupProblem(v1)).To(BeEmpty())
}

// An environment that may fall back and cannot have a real node (here:
// none of its binaries) runs the pod simulator, says why in one progress
// line, and records the reason; asked for NetworkPolicies, it refuses to
// start instead, as the simulator enforces none.
func TestAnUnavailableNodeFallsBackToTheSimulatorWithItsReason(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var progress bytes.Buffer
	noNode := t.TempDir()
	env, err := Start(ctx, Options{NoControllers: true, Node: NodeAuto, NodeBinDir: noNode, Progress: &progress})
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { g.Expect(env.Stop()).To(Succeed()) }()

	g.Expect(env.Node).To(BeNil())
	g.Expect(env.opts.Node).To(Equal(NodeSimulated))
	g.Expect(env.simCancel).NotTo(BeNil(), "the pod simulator runs")
	g.Expect(env.heldNodeLock).To(BeNil(), "the node's lock is not kept")
	if os.Geteuid() == 0 {
		g.Expect(env.NodeFallback).To(ContainSubstring(filepath.Join(noNode, "containerd")))
	}
	var said []string
	for _, l := range strings.Split(progress.String(), "\n") {
		if strings.Contains(l, "no real node") {
			said = append(said, l)
		}
	}
	g.Expect(said).To(HaveLen(1), progress.String())
	g.Expect(said[0]).To(And(ContainSubstring(env.NodeFallback), ContainSubstring("make node-assets"), ContainSubstring("pod simulator")))

	_, err = Start(ctx, Options{NoControllers: true, Node: NodeAuto, NodeBinDir: noNode, NetworkPolicies: true})
	g.Expect(err).To(MatchError(And(ContainSubstring("NetworkPolicies are enforced only on a real node"), ContainSubstring(env.NodeFallback))))
	_, err = Start(ctx, Options{NoControllers: true, Node: NodeSimulated, NetworkPolicies: true})
	g.Expect(err).To(MatchError(ContainSubstring("the pod simulator runs no Pod and enforces nothing")))
}
