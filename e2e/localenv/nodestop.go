package localenv

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Stop ends the node and leaves nothing behind on the machine: its
// processes stop, containerd with them; every container and shim is
// killed, what is mounted under Dir unmounted (the Pods' network
// namespaces go, and with them their veths), the kubelet's cgroups, the
// bridge and the chains of kube-proxy, kube-router, the kubelet and the
// CNI plugins are deleted, and the sysctls changed are set back.
//
// The Pods are not removed one by one through the CRI, as the kubelet
// would remove deleted ones: each sandbox's removal ran the CNI plugins'
// DEL, a dozen iptables and nft processes, and the sandboxes took most of
// every Stop (docs/design/node.md, "Time in the tests"). Everything that
// DEL undoes is under Dir (the IP leases), goes with the network
// namespace (the veths) or is in the chains cleanNetwork deletes — as for
// a node killed without Stop, which the next node's start cleans the same
// way (cleanStale).
func (n *Node) Stop() error {
	steps := newStepTimes()
	var errs []error
	for _, p := range n.proxies {
		errs = append(errs, p.Close())
	}
	n.podLinks = bridgePorts()
	// Together: none waits for another, and each usually exits at once
	// on SIGTERM, so the node's processes take as long as the slowest.
	// containerd's shims and their containers outlive it.
	errs = append(errs, stopAll(10*time.Second, n.DNS, n.KubeRouter, n.KubeProxy, n.Scheduler, n.Kubelet, n.Containerd))
	steps.done("processes")
	if n.Dir != "" {
		errs = append(errs, removeNodeRemains(n.Dir))
	}
	errs = append(errs, waitLinksGone(n.podLinks))
	steps.done("containers, mounts and cgroups")
	errs = append(errs, n.cleanNetwork())
	for i := len(n.restores) - 1; i >= 0; i-- {
		errs = append(errs, n.restores[i]())
	}
	if n.Dir != "" {
		errs = append(errs, os.RemoveAll(n.Dir))
	}
	steps.done("network and folder")
	if n.lock != nil {
		n.lock.Close()
	}
	if n.progress != nil {
		n.progress("the node %s stopped (%s)", NodeName, steps)
	}
	return errors.Join(errs...)
}

// stopAll stops the processes at once (nil ones are skipped), each with
// SIGTERM and SIGKILL after grace, and returns when all have exited.
func stopAll(grace time.Duration, procs ...*Process) error {
	errs := make([]error, len(procs))
	var wg sync.WaitGroup
	for i, p := range procs {
		if p == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = p.Stop(grace)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// cleanStale removes what a node whose launcher was killed before Stop
// left: with the machine's node lock held, every other node folder is
// stale (removeNodeRemains, then the folder).
func cleanStale(current string) error {
	dirs, err := filepath.Glob(filepath.Join(os.TempDir(), "plumb-node-*"))
	if err != nil || len(dirs) == 0 {
		return err
	}
	// Its Pods' veths are still on its bridge, which cleanNetwork deletes
	// after this.
	links := bridgePorts()
	var errs []error
	for _, dir := range dirs {
		if dir == current {
			continue
		}
		errs = append(errs, removeNodeRemains(dir), os.RemoveAll(dir))
	}
	return errors.Join(append(errs, waitLinksGone(links))...)
}

// removeNodeRemains kills what runs of the node whose folder is dir once
// containerd and the kubelet are gone — the shims, which name the folder,
// and the containers, which are the processes of the kubelet's cgroups —,
// waits until they are gone, unmounts what is mounted under the folder and
// removes the kubelet's cgroups.
func removeNodeRemains(dir string) error {
	pids := append(processesNaming(dir), kubepodsProcesses()...)
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	errs := []error{waitGone(pids, 10*time.Second), unmountUnder(dir)}
	// A killed process leaves its cgroup as it exits; removal can still
	// race with the kernel's own cleanup for a moment.
	for range 20 {
		if err := removeKubeCgroups(); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	return errors.Join(append(errs, removeKubeCgroups())...)
}

// processesNaming lists every process but this one whose command line
// names dir.
func processesNaming(dir string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, ent := range entries {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", ent.Name(), "cmdline"))
		if err == nil && strings.Contains(string(cmdline), dir) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// kubepodsProcesses lists the processes in the kubelet's cgroups, in
// every hierarchy: the Pods' containers and sandboxes.
func kubepodsProcesses() []int {
	var pids []int
	roots, _ := filepath.Glob("/sys/fs/cgroup/*/kubepods")
	for _, root := range roots {
		_ = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.Name() != "cgroup.procs" {
				return nil
			}
			b, _ := os.ReadFile(path)
			for _, field := range strings.Fields(string(b)) {
				if pid, err := strconv.Atoi(field); err == nil && !slices.Contains(pids, pid) {
					pids = append(pids, pid)
				}
			}
			return nil
		})
	}
	return pids
}

// waitGone waits until none of the killed processes runs: gone from /proc,
// or a zombie (its command line empty) that holds nothing of the node.
func waitGone(pids []int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		var left []int
		for _, pid := range pids {
			if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err == nil && len(b) > 0 {
				left = append(left, pid)
			}
		}
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes of the node still running %s after SIGKILL: %v", timeout, left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// bridgePorts lists the interfaces on the node's bridge: the host ends
// of the Pods' veths.
func bridgePorts() []string {
	entries, _ := os.ReadDir(filepath.Join("/sys/class/net", bridgeName, "brif"))
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// waitLinksGone waits until the host ends of the Pods' veths are gone: a
// veth goes with its peer's network namespace, which the kernel frees
// once its last process died and its mount is gone, a moment later. One
// still there after that is deleted.
func waitLinksGone(links []string) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		var left []string
		for _, l := range links {
			if _, err := os.Stat(filepath.Join("/sys/class/net", l)); err == nil {
				left = append(left, l)
			}
		}
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			var errs []error
			for _, l := range left {
				if out, err := exec.Command("ip", "link", "delete", l).CombinedOutput(); err != nil {
					errs = append(errs, fmt.Errorf("deleting the veth %s: %v: %s", l, err, strings.TrimSpace(string(out))))
				}
			}
			return errors.Join(errs...)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// unmountUnder lazily unmounts every mount point under dir, deepest first:
// the containers' overlay root filesystems, the sandboxes' /dev/shm and
// network namespaces, the kubelet's volumes.
func unmountUnder(dir string) error {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	defer f.Close()
	var points []string
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 64*1024), 1024*1024)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) < 5 {
			continue
		}
		// Field 5 is the mount point, with spaces and such octal-escaped.
		point := unescapeMount(fields[4])
		if point == dir || strings.HasPrefix(point, dir+"/") {
			points = append(points, point)
		}
	}
	if err := s.Err(); err != nil {
		return err
	}
	slices.SortFunc(points, func(a, b string) int { return len(b) - len(a) })
	var errs []error
	for _, p := range slices.Compact(points) {
		if err := syscall.Unmount(p, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
			errs = append(errs, fmt.Errorf("unmounting %s: %w", p, err))
		}
	}
	return errors.Join(errs...)
}

func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var c byte
			if _, err := fmt.Sscanf(s[i+1:i+4], "%03o", &c); err == nil {
				b.WriteByte(c)
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// removeKubeCgroups removes the kubelet's cgroup tree (kubepods, with the
// QoS classes and Pods under it) from each hierarchy, deepest first. A
// cgroup still holding a process cannot be removed: that is reported.
func removeKubeCgroups() error {
	roots, _ := filepath.Glob("/sys/fs/cgroup/*/kubepods")
	if _, err := os.Stat("/sys/fs/cgroup/kubepods"); err == nil {
		roots = append(roots, "/sys/fs/cgroup/kubepods")
	}
	var errs []error
	for _, root := range roots {
		var dirs []string
		_ = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
		slices.Reverse(dirs)
		for _, d := range dirs {
			if err := os.Remove(d); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, fmt.Errorf("removing the cgroup %s: %w", d, err))
			}
		}
	}
	return errors.Join(errs...)
}

// cleanNetwork deletes the bridge and every chain of kube-proxy, the
// kubelet and the CNI plugins (KUBE-*, CNI-*) with the rules that jump to
// them, in iptables and ip6tables; kube-proxy's nftables tables too.
// Only one real node runs on a machine (nodeLock), so these are ours.
func (n *Node) cleanNetwork() error {
	var errs []error
	if _, err := os.Stat("/sys/class/net/" + bridgeName); err == nil {
		if out, err := exec.Command("ip", "link", "delete", bridgeName).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("deleting the bridge %s: %v: %s", bridgeName, err, strings.TrimSpace(string(out))))
		}
	}
	for _, bin := range []string{"iptables", "ip6tables"} {
		if _, err := exec.LookPath(bin); err != nil {
			continue
		}
		for _, table := range []string{"nat", "filter", "mangle"} {
			errs = append(errs, cleanChains(bin, table))
		}
	}
	errs = append(errs, cleanIPSets())
	if _, err := exec.LookPath("nft"); err == nil {
		for _, family := range []string{"ip", "ip6"} {
			// Absent unless kube-proxy ran in nftables mode: ignore the error.
			_ = exec.Command("nft", "delete", "table", family, "kube-proxy").Run()
		}
	}
	return errors.Join(errs...)
}

// cleanIPSets destroys kube-router's IP sets (KUBE-SRC-…, KUBE-DST-…),
// once no rule refers to them (cleanChains ran before).
func cleanIPSets() error {
	if _, err := exec.LookPath("ipset"); err != nil {
		return nil
	}
	out, err := exec.Command("ipset", "list", "-n").Output()
	if err != nil {
		return fmt.Errorf("ipset list -n: %w", err)
	}
	var errs []error
	for _, name := range strings.Fields(string(out)) {
		if !strings.HasPrefix(name, "KUBE-") && !strings.HasPrefix(name, "inet6:KUBE-") {
			continue
		}
		if out, err := exec.Command("ipset", "destroy", name).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("ipset destroy %s: %v: %s", name, err, strings.TrimSpace(string(out))))
		}
	}
	return errors.Join(errs...)
}

func ourChain(name string) bool {
	return strings.HasPrefix(name, "KUBE-") || strings.HasPrefix(name, "CNI-")
}

// cleanChains deletes, in one table, the rules of built-in chains that
// jump to our chains, then flushes and deletes our chains: in one
// iptables-restore transaction, since one iptables process per rule and
// chain (a node with a few Services has a hundred) took 3–8 s of each Stop
// on a loaded machine.
func cleanChains(bin, table string) error {
	out, err := exec.Command(bin, "-w", "5", "-t", table, "-S").Output()
	if err != nil {
		return fmt.Errorf("%s -t %s -S: %w", bin, table, err)
	}
	var chains []string
	// jumps are the lines of -S that jump to our chains, as -S prints
	// them (quoted as iptables-restore reads them), -A made -D.
	var jumps []string
	for _, line := range strings.Split(string(out), "\n") {
		f := splitRule(line)
		switch {
		case len(f) >= 2 && f[0] == "-N" && ourChain(f[1]):
			chains = append(chains, f[1])
		case len(f) >= 2 && f[0] == "-A" && !ourChain(f[1]):
			for i := 0; i+1 < len(f); i++ {
				if (f[i] == "-j" || f[i] == "-g") && ourChain(f[i+1]) {
					jumps = append(jumps, "-D"+strings.TrimPrefix(line, "-A"))
					break
				}
			}
		}
	}
	if len(chains) == 0 && len(jumps) == 0 {
		return nil
	}
	var commands []string
	commands = append(commands, jumps...)
	for _, c := range chains {
		commands = append(commands, "-F "+c)
	}
	for _, c := range chains {
		commands = append(commands, "-X "+c)
	}
	restore := exec.Command(bin+"-restore", "-w", "5", "--noflush")
	restore.Stdin = strings.NewReader("*" + table + "\n" + strings.Join(commands, "\n") + "\nCOMMIT\n")
	if out, err := restore.CombinedOutput(); err != nil {
		return fmt.Errorf("%s-restore of table %s (%d rules, %d chains): %v: %s", bin, table, len(jumps), len(chains), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// splitRule splits a line of iptables -S into its arguments: a comment
// with spaces comes double-quoted, with \" for a quote inside.
func splitRule(line string) []string {
	var (
		args   []string
		cur    strings.Builder
		quoted bool
		in     bool
	)
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == '\\' && quoted && i+1 < len(line):
			i++
			cur.WriteByte(line[i])
		case c == '"':
			quoted, in = !quoted, true
		case c == ' ' && !quoted:
			if in {
				args = append(args, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	if in {
		args = append(args, cur.String())
	}
	return args
}
