package localenv

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// writeConfigs writes containerd's, the CNI network's and the kubelet's
// configuration under n.Dir and makes the node's processes.
func (n *Node) writeConfigs(registry, kubeconfig string) error {
	d := func(parts ...string) string { return filepath.Join(append([]string{n.Dir}, parts...)...) }
	for _, dir := range []string{d("cni", "net.d"), d("certs.d", registry), d("certs.d", "_default"), d("kubelet")} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	files := map[string]string{
		d("containerd.toml"):                   containerdConfig(n.Dir, n.BinDir, n.PauseImage),
		d("certs.d", registry, "hosts.toml"):   registryHosts(registry),
		d("certs.d", "_default", "hosts.toml"): registryHosts(registry),
		d("cni", "net.d", "10-plumb.conflist"): cniConfig(n.Dir),
		d("kubelet.yaml"):                      kubeletConfig(n.Dir, n.ClientCAFile),
	}
	for path, text := range files {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			return err
		}
	}
	proxyHealth, err := freePort()
	if err != nil {
		return err
	}
	proxyMetrics, err := freePort()
	if err != nil {
		return err
	}
	n.ProxyHealthAddr = proxyHealth
	// containerd finds its shim, and the shim and the CNI plugins find
	// iptables and runc, through PATH.
	path := "PATH=" + n.BinDir + ":" + os.Getenv("PATH")
	logPath := func(name string) string { return filepath.Join(n.logDir, name+".log") }
	n.Containerd = &Process{
		Name: "containerd", Path: filepath.Join(n.BinDir, "containerd"), LogPath: logPath("containerd"),
		Args: []string{"--config", d("containerd.toml")},
		Env:  []string{path},
	}
	n.Scheduler = &Process{
		Name: "kube-scheduler", Path: filepath.Join(n.AssetsDir, "kube-scheduler"), LogPath: logPath("kube-scheduler"),
		Args: []string{
			"--kubeconfig=" + kubeconfig,
			"--authentication-kubeconfig=" + kubeconfig,
			"--authorization-kubeconfig=" + kubeconfig,
			"--leader-elect=false",
			// It serves nothing anyone reads; port 0 would still bind one.
			"--secure-port=0",
			"--v=1",
		},
		Supervised: true,
	}
	n.Kubelet = &Process{
		Name: "kubelet", Path: filepath.Join(n.AssetsDir, "kubelet"), LogPath: logPath("kubelet"),
		Args: []string{
			"--config=" + d("kubelet.yaml"),
			// The node's own identity (nodeidentity.go); kube-proxy and
			// kube-scheduler keep the admin's.
			"--kubeconfig=" + n.Kubeconfig,
			"--root-dir=" + d("kubelet"),
			"--cert-dir=" + d("kubelet", "pki"),
			"--hostname-override=" + NodeName,
			"--node-ip=" + nodeIP,
			"--v=1",
		},
		Env: []string{path},
	}
	n.KubeProxy = &Process{
		Name: "kube-proxy", Path: filepath.Join(n.AssetsDir, "kube-proxy"), LogPath: logPath("kube-proxy"),
		Args: []string{
			"--kubeconfig=" + kubeconfig,
			"--hostname-override=" + NodeName,
			"--proxy-mode=iptables",
			"--cluster-cidr=" + PodCIDR,
			"--healthz-bind-address=" + proxyHealth,
			"--metrics-bind-address=" + proxyMetrics,
			// NodePorts on the node's address only: on 127.0.0.1 they
			// would need route_localnet, a host-wide sysctl.
			"--nodeport-addresses=" + nodeIP + "/32",
			// Leave the host's conntrack table size alone.
			"--conntrack-max-per-core=0",
			"--v=1",
		},
		Env: []string{path},
	}
	n.KubeRouter = &Process{
		Name: "kube-router", Path: filepath.Join(n.BinDir, "kube-router"), LogPath: logPath("kube-router"),
		Args: []string{
			"--kubeconfig=" + kubeconfig,
			"--hostname-override=" + NodeName,
			// Only the network-policy controller: the bridge plugin is the
			// pod network and kube-proxy routes Services.
			"--run-firewall=true",
			"--run-router=false",
			"--run-service-proxy=false",
			"--enable-cni=false",
			// Traffic to a Service's cluster IP is told apart from Pod
			// traffic by this range: envtest's.
			"--service-cluster-ip-range=" + serviceCIDR,
			// Its health and metrics servers would listen on every
			// interface; waitKubeRouter looks at its chains instead.
			"--health-port=0",
			"--metrics-port=0",
			"--v=1",
		},
		// It runs iptables-save/-restore and ipset from the machine.
		Env: []string{path},
	}
	return nil
}

// freePort returns a port of 127.0.0.1 that was free a moment ago, for a
// child that binds it itself (kube-proxy takes no inherited socket).
func freePort() (string, error) {
	addr, f, err := reserve()
	if err != nil {
		return "", err
	}
	f.Close()
	return addr, nil
}

// containerdConfig: containerd 2.x's version 3 configuration, everything
// under dir: its root, state, socket; the CRI's sandbox image from the
// launcher's registry; the pod network's plugins and configuration; the
// network namespaces under the state folder rather than /run/netns.
func containerdConfig(dir, binDir, pause string) string {
	return fmt.Sprintf(`version = 3
root = %[1]q
state = %[2]q

[grpc]
  address = %[3]q

[ttrpc]
  address = %[4]q

[plugins."io.containerd.cri.v1.images"]
  snapshotter = "overlayfs"
  [plugins."io.containerd.cri.v1.images".pinned_images]
    sandbox = %[5]q
  [plugins."io.containerd.cri.v1.images".registry]
    config_path = %[6]q

[plugins."io.containerd.cri.v1.runtime"]
  netns_mounts_under_state_dir = true
  # These machines' root lacks CAP_SYS_RESOURCE: runc cannot lower a
  # process's oom_score_adj (the sandbox's -998 failed with "failed to
  # update /proc/self/oom_score_adj: Permission denied"). Clamp to
  # containerd's own score instead, as for rootless containerd.
  restrict_oom_score_adj = true
  [plugins."io.containerd.cri.v1.runtime".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
        BinaryName = %[7]q
        SystemdCgroup = false
  [plugins."io.containerd.cri.v1.runtime".cni]
    bin_dirs = [%[8]q]
    conf_dir = %[9]q

[plugins."io.containerd.grpc.v1.cri"]
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
`,
		filepath.Join(dir, "containerd", "root"),
		filepath.Join(dir, "containerd", "state"),
		filepath.Join(dir, "containerd.sock"),
		filepath.Join(dir, "containerd-ttrpc.sock"),
		pause,
		filepath.Join(dir, "certs.d"),
		filepath.Join(binDir, "runc"),
		binDir,
		filepath.Join(dir, "cni", "net.d"),
	)
}

// registryHosts lets containerd pull from the launcher's registry over
// plain HTTP; it is on 127.0.0.1. The same file is every other registry's
// (_default): an image of docker.io or any other host is looked up in the
// launcher's registry under its path (library/busybox …), so the node
// never reaches outside, and an image not pushed there fails to pull with
// "not found" at once.
func registryHosts(registry string) string {
	return fmt.Sprintf(`server = "http://%[1]s"

[host."http://%[1]s"]
  capabilities = ["pull", "resolve"]
`, registry)
}

// cniConfig: the Pods on one bridge, addresses from host-local with its
// leases under dir, outgoing traffic masqueraded, hostPorts by portmap.
func cniConfig(dir string) string {
	return fmt.Sprintf(`{
  "cniVersion": "1.0.0",
  "name": "plumb",
  "plugins": [
    {
      "type": "bridge",
      "bridge": %[1]q,
      "isGateway": true,
      "ipMasq": true,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "dataDir": %[2]q,
        "ranges": [[{"subnet": %[3]q, "gateway": %[4]q}]],
        "routes": [{"dst": "0.0.0.0/0"}]
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
`, bridgeName, filepath.Join(dir, "cni", "leases"), PodCIDR, nodeIP)
}

// podLogsDir is where the kubelet of the node whose folder is dir keeps the
// Pods' logs: under the folder, which Stop removes, rather than the
// machine's /var/log/pods, which every node would fill and none empty.
func podLogsDir(dir string) string { return filepath.Join(dir, "pod-logs") }

// kubeletConfig: what this machine needs of a kubelet (docs/design/node.md):
// cgroup v1 accepted, the cgroupfs driver (no systemd), containerd's
// socket, a server on the bridge's address only that only the API server's
// kubelet client and users RBAC allows may use (kubeletauth.go), the Pods'
// logs under dir (podLogsDir), and eviction and image
// garbage collection thresholds that a shared, three-quarters full disk
// does not trip.
func kubeletConfig(dir, clientCAFile string) string {
	return strings.TrimLeft(fmt.Sprintf(`
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
containerRuntimeEndpoint: unix://%[1]s
address: %[2]s
port: 10250
readOnlyPort: 0
healthzPort: 0
authentication:
  anonymous:
    enabled: false
  x509:
    clientCAFile: %[5]s
  webhook:
    enabled: true
authorization:
  mode: Webhook
failSwapOn: false
evictionHard:
  memory.available: 100Mi
  nodefs.available: "1%%"
  nodefs.inodesFree: "1%%"
  imagefs.available: "1%%"
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
registerNode: true
serializeImagePulls: false
syncFrequency: 10s
fileCheckFrequency: 10s
nodeStatusUpdateFrequency: 5s
resolvConf: /etc/resolv.conf
clusterDNS: [%[3]s]
clusterDomain: %[4]s
podLogsDir: %[6]s
`, filepath.Join(dir, "containerd.sock"), nodeIP, ClusterDNS, clusterDomain, clientCAFile, podLogsDir(dir)), "\n")
}
