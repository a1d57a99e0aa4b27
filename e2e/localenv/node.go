package localenv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The kinds of node Options.Node names.
const (
	// NodeSimulated is the pod simulator (simulator.go): no container runs.
	NodeSimulated = "simulated"
	// NodeReal is a kubelet with containerd, runc and a bridge network,
	// kube-proxy and kube-scheduler (docs/design/node.md).
	NodeReal = "real"
)

// The real node's fixed names and ranges. Only one real node runs on a
// machine at a time (nodeLock): kube-proxy's chains and the bridge are
// host-wide.
const (
	NodeName = "plumb-node"
	// PodCIDR is the bridge's range, one host-local range for the node;
	// not in use on these machines (no route to it) and apart from the
	// API server's Service range (10.0.0.0/24, envtest's).
	PodCIDR = "10.244.0.0/24"
	// nodeIP is the bridge's own address: the Pods' gateway, the Node's
	// InternalIP and where the kubelet serves (kubelet refuses a loopback
	// node IP).
	nodeIP     = "10.244.0.1"
	bridgeName = "plumb0"
	// pauseTag is the tag of the sandbox image built from ./pause.
	pauseTag = "v1"
	nodeLock = "/run/plumb-node.lock"
	// serviceCIDR is envtest's Service range, the API server's.
	serviceCIDR = "10.0.0.0/24"
	// kubeRouterForward is the chain kube-router's network-policy
	// controller sends forwarded (and bridged) Pod traffic through.
	kubeRouterForward = "KUBE-ROUTER-FORWARD"
)

// Node is a real node's processes: containerd, kubelet, kube-proxy and
// kube-scheduler (localenv runs no scheduler otherwise), started in that
// order after the control plane and CoreDNS, stopped in the reverse order;
// and the relays that bring the API server (and, with Options.NoControllers,
// the Git server) to the bridge's address.
type Node struct {
	// Dir holds the node's configuration, sockets and state: containerd's
	// root and state, kubelet's root, the CNI configuration and IP leases.
	// A short path of its own, as unix socket paths are bounded.
	Dir string
	// BinDir holds containerd, runc, crictl and the CNI plugins
	// (hack/node.sh); AssetsDir kubelet, kube-proxy and kube-scheduler.
	BinDir, AssetsDir string
	// PauseImage is the sandbox image's reference in the Registry.
	PauseImage string
	// Kubeconfig is the kubelet's: the node's own identity, NodeUser in
	// NodeGroup (nodeidentity.go), not the admin's.
	Kubeconfig string
	// ClientCAFile is the API server's client CA, which the kubelet trusts
	// for the API server's own client certificate (kubeletauth.go).
	ClientCAFile string
	// ProxyHealthAddr is kube-proxy's /healthz, 200 once its rules are in.
	ProxyHealthAddr string
	Containerd      *Process
	Kubelet         *Process
	KubeProxy       *Process
	Scheduler       *Process
	// KubeRouter enforces NetworkPolicies when Options.NetworkPolicies
	// asks: its network-policy controller alone, with iptables and ipset
	// (docs/design/node.md). Made always, started only then.
	KubeRouter *Process
	// DNS is CoreDNS on the bridge's address (dns.go); DNSReadyAddr its
	// /ready.
	DNS          *Process
	DNSReadyAddr string
	// APIServerAddr is where Pods reach the API server: the bridge's
	// address, the `kubernetes` Service's endpoint, forwarded to the API
	// server on 127.0.0.1 (bridgeproxy.go).
	APIServerAddr string

	proxies []*bridgeProxy

	// progress is the environment's: Stop says where its time went.
	progress func(format string, args ...any)
	lock     *os.File
	logDir   string
	restores []func() error
	// podLinks are the host ends of the Pods' veths as Stop began, all
	// gone when it returns.
	podLinks []string
}

// NodeUnavailable says why a real node cannot start on this machine, or
// nil when it can: the binaries are built (`make node-assets`), the process
// runs as root, the kubelet can write its cgroups, and the kernel has what
// the pod network needs (nodechoice.go).
func NodeUnavailable(binDir, assetsDir string) error {
	return probeNode(binDir, assetsDir).unavailable()
}

// PolicyEngineUnavailable says why kube-router cannot enforce
// NetworkPolicies on a real node, or nil when it can: its binary
// (`make node-assets`) and Debian's ipset.
func PolicyEngineUnavailable(binDir string) error {
	var missing []string
	if _, err := os.Stat(filepath.Join(binDir, "kube-router")); err != nil {
		missing = append(missing, filepath.Join(binDir, "kube-router"))
	}
	if _, err := exec.LookPath("ipset"); err != nil {
		missing = append(missing, "ipset (Debian's ipset)")
	}
	if len(missing) > 0 {
		return fmt.Errorf("enforcing NetworkPolicies needs (run `make node-assets`):\n  %s", strings.Join(missing, "\n  "))
	}
	return nil
}

// RealNodeAssets is the folder of the Kubernetes binaries a real node's
// environment runs ($KUBEBUILDER_ASSETS, else bin/k8s of the checkout),
// and NodeUnavailable's reason why a real node cannot start here, for a
// test to skip with.
func RealNodeAssets() (assets string, unavailable error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	assets = os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		assets = filepath.Join(root, "bin", "k8s")
	}
	return assets, NodeUnavailable(filepath.Join(root, "bin", "node"), assets)
}

// fillNodeRegistry starts the registry a real node pulls from, with the
// sample's images and the sandbox (pause) image; Start runs it while the
// control plane starts.
func (e *Env) fillNodeRegistry(ctx context.Context) error {
	if err := e.startRegistry(ctx); err != nil {
		return err
	}
	e.progress("building the sandbox (pause) image into the registry at %s", e.Registry.Addr)
	var err error
	if e.pauseImage, err = e.Registry.BuildAndPush(ctx, e.Root, "./e2e/localenv/pause", pauseTag); err != nil {
		return fmt.Errorf("the sandbox image: %w", err)
	}
	return nil
}

// startNode starts containerd, kube-scheduler, kubelet and kube-proxy
// (the registry is filled: fillNodeRegistry), and waits until the Node is
// Ready and kube-proxy has written its rules.
func (e *Env) startNode(ctx context.Context) error {
	steps := newStepTimes()
	binDir := e.opts.NodeBinDir
	if err := NodeUnavailable(binDir, e.opts.AssetsDir); err != nil {
		return err
	}
	if e.opts.NetworkPolicies {
		if err := PolicyEngineUnavailable(binDir); err != nil {
			return err
		}
	}
	// The node's folder, images and containers go under the temporary
	// folder.
	if err := checkFreeDisk(os.TempDir(), MinFreeDisk); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "plumb-node-")
	if err != nil {
		return err
	}
	n := &Node{Dir: dir, BinDir: binDir, AssetsDir: e.opts.AssetsDir, PauseImage: e.pauseImage, logDir: filepath.Join(e.StateDir, "logs"), progress: e.progress}
	e.Node = n
	// NodeAuto took the lock as it chose the node (nodechoice.go);
	// NodeReal waits for it.
	if n.lock, e.heldNodeLock = e.heldNodeLock, nil; n.lock == nil {
		if n.lock, err = takeNodeLock(ctx, e.progress); err != nil {
			return err
		}
	}
	steps.done("the lock")
	// Leftovers of a node that was not stopped (a killed launcher) would
	// make the bridge's address or kube-proxy's chains clash.
	if err := cleanStale(dir); err != nil {
		e.progress("removing what a node left before: %v", err)
	}
	_ = n.cleanNetwork()
	steps.done("leftovers")

	if err := n.prepareHost(); err != nil {
		return err
	}
	if n.Kubeconfig, err = e.writeNodeKubeconfig(); err != nil {
		return err
	}
	n.ClientCAFile = filepath.Join(e.StateDir, "apiserver", clientCAName)
	if err := e.authorizeKubeletClient(ctx); err != nil {
		return err
	}
	if err := n.writeConfigs(e.Registry.Addr, e.Kubeconfig); err != nil {
		return err
	}
	// The API server as the `kubernetes` Service's endpoint says
	// (configureInCluster advertised the bridge's address).
	if n.APIServerAddr, err = n.expose(e.Config.Host); err != nil {
		return err
	}
	if err := n.newDNS(e.Kubeconfig); err != nil {
		return err
	}
	e.progress("starting coredns on %s:53", ClusterDNS)
	if err := n.DNS.Start(); err != nil {
		return err
	}

	steps.done("host, identity and CoreDNS")

	e.progress("starting containerd")
	if err := n.Containerd.Start(); err != nil {
		return err
	}
	if err := n.waitContainerd(ctx); err != nil {
		return err
	}
	steps.done("containerd")
	e.progress("starting kube-scheduler and kubelet")
	if err := n.Scheduler.Start(); err != nil {
		return err
	}
	if err := n.Kubelet.Start(); err != nil {
		return err
	}
	// kube-proxy starts as soon as the kubelet registered the Node, whose
	// addresses it reads (it would wait for them, and go on without them
	// after 30 s), while the kubelet makes it Ready.
	startProxy := func() error {
		e.progress("starting kube-proxy")
		return n.KubeProxy.Start()
	}
	if err := e.waitNodeReady(ctx, startProxy); err != nil {
		return err
	}
	steps.done("kubelet to Node Ready")
	if err := n.waitProxy(ctx); err != nil {
		return err
	}
	steps.done("kube-proxy")
	if e.opts.NetworkPolicies {
		e.progress("starting kube-router's network-policy controller")
		if err := n.KubeRouter.Start(); err != nil {
			return err
		}
		if err := n.waitKubeRouter(ctx); err != nil {
			return err
		}
		steps.done("kube-router")
	}
	if err := n.waitDNS(ctx); err != nil {
		return err
	}
	steps.done("CoreDNS ready")
	e.progress("the node %s is Ready and kube-proxy's rules are in (%s)", NodeName, steps)
	return nil
}

// ExposeOnBridge makes a server of the launcher's on 127.0.0.1 (the Git
// server, a chart repository) reachable from the real node's Pods at the
// bridge's address, the same port, and returns that host:port.
func (e *Env) ExposeOnBridge(addr string) (string, error) {
	if e.Node == nil {
		return "", errors.New("no real node: the launcher's servers are reachable on 127.0.0.1")
	}
	return e.Node.expose(addr)
}

// expose forwards the bridge's address to addr, a host:port or a URL of
// 127.0.0.1, until Stop.
func (n *Node) expose(addr string) (string, error) {
	if u, err := url.Parse(addr); err == nil && u.Host != "" {
		addr = u.Host
	}
	p, at, err := exposeOnBridge(addr)
	if err != nil {
		return "", err
	}
	n.proxies = append(n.proxies, p)
	return at, nil
}

// takeNodeLock holds the machine's one real node for this environment,
// waiting (while ctx allows) for another environment's to stop: the
// attempt of tryNodeLock, made again until it takes the lock.
func takeNodeLock(ctx context.Context, progress func(string, ...any)) (*os.File, error) {
	said := time.Now()
	for {
		if f, err := tryNodeLock(); f != nil || err != nil {
			return f, err
		}
		if time.Since(said) >= progressEvery {
			said = time.Now()
			progress("waiting for another environment's real node to stop (%s is locked)", nodeLock)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("another environment runs a real node on this machine (%s is locked): %w", nodeLock, ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// prepareHost makes the bridge with the node's address (kubelet binds to
// it before the first Pod would make it) and turns on the sysctls the pod
// network needs, remembering the old values for Stop.
func (n *Node) prepareHost() error {
	for _, args := range [][]string{
		{"link", "add", bridgeName, "type", "bridge"},
		{"addr", "add", nodeIP + "/24", "dev", bridgeName},
		{"link", "set", bridgeName, "up"},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
		}
	}
	// Traffic between two Pods of the bridge to a Service's address is
	// DNATed by kube-proxy's rules only if bridged packets meet iptables.
	return n.setSysctl("/proc/sys/net/bridge/bridge-nf-call-iptables", "1")
}

func (n *Node) setSysctl(path, value string) error {
	old, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if strings.TrimSpace(string(old)) == value {
		return nil
	}
	if err := os.WriteFile(path, []byte(value), 0o644); err != nil {
		return err
	}
	n.restores = append(n.restores, func() error { return os.WriteFile(path, old, 0o644) })
	return nil
}

// waitContainerd waits until containerd answers on its socket.
func (n *Node) waitContainerd(ctx context.Context) error {
	sock := filepath.Join(n.Dir, "containerd.sock")
	for {
		if c, err := net.Dial("unix", sock); err == nil {
			c.Close()
			return nil
		}
		if done, exitErr := n.Containerd.Exited(); isClosed(done) {
			return fmt.Errorf("containerd exited (%v); the end of its log:\n%s", exitErr(), Tail(n.Containerd.LogPath, 20))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("containerd did not answer on %s; the end of its log:\n%s", sock, Tail(n.Containerd.LogPath, 20))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// waitNodeReady waits until the kubelet registered the Node and says it
// is Ready (its runtime and network are up), calling registered once when
// the Node is there.
func (e *Env) waitNodeReady(ctx context.Context, registered func() error) error {
	n := e.Node
	began, said := time.Now(), time.Now()
	last := "not registered yet"
	for {
		node := &corev1.Node{}
		if err := e.Client.Get(ctx, types.NamespacedName{Name: NodeName}, node); err == nil {
			if registered != nil {
				if err := registered(); err != nil {
					return err
				}
				registered = nil
			}
			for _, c := range node.Status.Conditions {
				if c.Type == corev1.NodeReady {
					if c.Status == corev1.ConditionTrue {
						return nil
					}
					last = fmt.Sprintf("Ready=%s: %s", c.Status, c.Message)
				}
			}
		}
		for _, p := range []*Process{n.Kubelet, n.Scheduler, n.Containerd} {
			if done, exitErr := p.Exited(); isClosed(done) {
				return fmt.Errorf("%s exited (%v); the end of its log %s:\n%s", p.Name, exitErr(), p.LogPath, Tail(p.LogPath, 20))
			}
		}
		if time.Since(said) >= progressEvery {
			said = time.Now()
			e.progress("still waiting for the Node %s to be Ready (%s): %s", NodeName, time.Since(began).Round(time.Second), last)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the Node %s was not Ready in %s (%s); the end of the kubelet's log %s:\n%s", NodeName, time.Since(began).Round(time.Second), last, n.Kubelet.LogPath, Tail(n.Kubelet.LogPath, 20))
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// waitKubeRouter waits until kube-router's network-policy controller has
// hooked its chain into the filter table's FORWARD chain, which it does
// before its first sync of the policies.
func (n *Node) waitKubeRouter(ctx context.Context) error {
	for {
		// Its rule carries a comment of its own; any jump to the chain will do.
		out, _ := exec.CommandContext(ctx, "iptables", "-w", "5", "-t", "filter", "-S", "FORWARD").Output()
		if strings.Contains(string(out), "-j "+kubeRouterForward) {
			return nil
		}
		if done, exitErr := n.KubeRouter.Exited(); isClosed(done) {
			return fmt.Errorf("kube-router exited (%v); the end of its log %s:\n%s", exitErr(), n.KubeRouter.LogPath, Tail(n.KubeRouter.LogPath, 20))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kube-router's chain %s is not in FORWARD; the end of its log %s:\n%s", kubeRouterForward, n.KubeRouter.LogPath, Tail(n.KubeRouter.LogPath, 20))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// waitProxy waits until kube-proxy's /healthz answers 200: it has
// written the Services' rules once.
func (n *Node) waitProxy(ctx context.Context) error {
	client := &http.Client{Timeout: 2 * time.Second}
	for {
		resp, err := client.Get("http://" + n.ProxyHealthAddr + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if done, exitErr := n.KubeProxy.Exited(); isClosed(done) {
			return fmt.Errorf("kube-proxy exited (%v); the end of its log %s:\n%s", exitErr(), n.KubeProxy.LogPath, Tail(n.KubeProxy.LogPath, 20))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kube-proxy was not healthy; the end of its log %s:\n%s", n.KubeProxy.LogPath, Tail(n.KubeProxy.LogPath, 20))
		case <-time.After(200 * time.Millisecond):
		}
	}
}
