package localenv

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// The cluster's DNS on a real node: CoreDNS (hack/node.sh builds it from
// github.com/coredns/coredns), a process of the launcher's on the bridge's
// address, port 53, with its kubernetes plugin reading Services and
// EndpointSlices through the admin kubeconfig. The kubelet gives every
// Pod (dnsPolicy ClusterFirst) that address as its nameserver and the
// cluster.local search domains, so deploy/'s names
// (nats://nats.plumb-system:4222, source-controller's Service) resolve as
// in any cluster. Nothing is forwarded outside: a name that is not the
// cluster's is NXDOMAIN at once.
const (
	clusterDomain = "cluster.local"
	// ClusterDNS is where CoreDNS listens, the Pods' nameserver: the
	// bridge's address, reachable from every Pod and from nowhere else.
	// It is no Pod of kube-system's: an egress NetworkPolicy lets DNS
	// through to it by its address (`plumb install --cluster-dns`).
	ClusterDNS = nodeIP
)

// corefile serves the cluster's zones from the API (Pods' A records
// "insecure", as kubeadm's CoreDNS does, for the names <ip>.<ns>.pod...),
// NXDOMAIN for every other name, and /ready on readyAddr once the
// kubernetes plugin has synced.
func corefile(kubeconfig, readyAddr string) string {
	return fmt.Sprintf(`%[1]s:53 in-addr.arpa:53 ip6.arpa:53 {
    bind %[2]s
    errors
    ready %[3]s
    kubernetes %[1]s in-addr.arpa ip6.arpa {
        kubeconfig %[4]s
        pods insecure
    }
    cache 5
}
.:53 {
    bind %[2]s
    errors
    template ANY ANY {
        rcode NXDOMAIN
    }
}
`, clusterDomain, ClusterDNS, readyAddr, kubeconfig)
}

// newDNS writes the Corefile under n.Dir and makes the CoreDNS process.
func (n *Node) newDNS(kubeconfig string) error {
	ready, err := freePort()
	if err != nil {
		return err
	}
	path := filepath.Join(n.Dir, "Corefile")
	if err := os.WriteFile(path, []byte(corefile(kubeconfig, ready)), 0o644); err != nil {
		return err
	}
	n.DNSReadyAddr = ready
	n.DNS = &Process{
		Name: "coredns", Path: filepath.Join(n.BinDir, "coredns"), LogPath: filepath.Join(n.logDir, "coredns.log"),
		Args: []string{"-conf", path},
	}
	return nil
}

// waitDNS waits until CoreDNS's /ready answers 200: it serves, and the
// kubernetes plugin has listed the Services.
func (n *Node) waitDNS(ctx context.Context) error {
	client := &http.Client{Timeout: 2 * time.Second}
	for {
		resp, err := client.Get("http://" + n.DNSReadyAddr + "/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if done, exitErr := n.DNS.Exited(); isClosed(done) {
			return fmt.Errorf("coredns exited (%v); the end of its log %s:\n%s", exitErr(), n.DNS.LogPath, Tail(n.DNS.LogPath, 20))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("coredns was not ready; the end of its log %s:\n%s", n.DNS.LogPath, Tail(n.DNS.LogPath, 20))
		case <-time.After(200 * time.Millisecond):
		}
	}
}
