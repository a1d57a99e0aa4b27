package localenv

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The stories of this file end a real node: one stops the shared node
// (sharednode_test.go) and checks what its Stop leaves, one kills a node
// of its own. They come after the other stories on the shared node in the
// package's order, so that it starts once.

// A real node runs a Deployment of an image built here and pushed to the
// launcher's registry: it becomes Available on the kubelet, its Pod gets
// an address of the bridge, and a request from this process to the
// Service's cluster IP (kube-proxy's rules) reaches it. Stopping the
// environment leaves no process, mount, bridge, chain or Pod log folder
// behind — of this story's Pods, and of every story's before it on the
// shared node.
func TestARealNodeServesADeploymentThroughItsService(t *testing.T) {
	ctx, g, env, ns := onSharedNode(t, "serves", 10*time.Minute)
	deploy, svc, labels := deployEcho(ctx, g, env, ns)

	created := time.Now()
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(deploy), deploy)).To(Succeed())
		g.Expect(deploy.Status.AvailableReplicas).To(Equal(int32(1)))
	}).WithContext(ctx).WithTimeout(3*time.Minute).WithPolling(500*time.Millisecond).Should(Succeed(), func() string {
		return podReport(ctx, env, ns) + "\n" + Tail(env.Node.Kubelet.LogPath, 20)
	})
	t.Logf("the Deployment was Available %s after it was created", time.Since(created).Round(100*time.Millisecond))

	pods := &corev1.PodList{}
	g.Expect(env.Client.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels(labels))).To(Succeed())
	g.Expect(pods.Items).To(HaveLen(1))
	pod := pods.Items[0]
	g.Expect(pod.Spec.NodeName).To(Equal(NodeName))
	_, podNet, _ := net.ParseCIDR(PodCIDR)
	g.Expect(podNet.Contains(net.ParseIP(pod.Status.PodIP))).To(BeTrue(), "Pod IP %s outside %s", pod.Status.PodIP, PodCIDR)

	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(svc), svc)).To(Succeed())
	url := "http://" + net.JoinHostPort(svc.Spec.ClusterIP, "80") + "/"
	httpClient := ServiceHTTPClient(2 * time.Second)
	// kube-proxy writes the Service's rules once the endpoints are ready,
	// a moment after the Deployment is Available.
	g.Eventually(func(g Gomega) {
		resp, err := httpClient.Get(url)
		g.Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
		g.Expect(string(body)).To(Equal("hello from " + pod.Name + "\n"))
	}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())

	// An image of another registry is looked for in the launcher's
	// registry only: it fails to pull there, nothing reaches outside.
	outside := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "outside", Namespace: ns},
		Spec: corev1.PodSpec{
			AutomountServiceAccountToken: ptr.To(false),
			Containers:                   []corev1.Container{{Name: "busybox", Image: "busybox:1.36"}},
		},
	}
	g.Expect(env.Client.Create(ctx, outside)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(outside), outside)).To(Succeed())
		g.Expect(outside.Status.ContainerStatuses).To(HaveLen(1))
		waiting := outside.Status.ContainerStatuses[0].State.Waiting
		g.Expect(waiting).NotTo(BeNil())
		g.Expect(waiting.Reason).To(Equal("ErrImagePull"))
		g.Expect(waiting.Message).To(ContainSubstring("docker.io/library/busybox:1.36: not found"))
	}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())
	regLog, err := os.ReadFile(filepath.Join(env.StateDir, "logs", "registry.log"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(regLog)).To(ContainSubstring("/v2/library/busybox/manifests/1.36"), "the launcher's registry was asked for busybox")
	t.Logf("an image of docker.io: %s", outside.Status.ContainerStatuses[0].State.Waiting.Message)

	// The Pod's logs are in the node's folder, not the machine's
	// /var/log/pods, which no Stop would empty.
	podLogs := pod.Namespace + "_" + pod.Name + "_" + string(pod.UID)
	_, err = os.Stat(filepath.Join(podLogsDir(env.Node.Dir), podLogs))
	g.Expect(err).NotTo(HaveOccurred(), "the Pod's log folder under the node's")

	// The last story on the shared node: it stops now, whoever used it.
	node := env.Node
	stopBegan := time.Now()
	g.Expect(sharedNode.Stop()).To(Succeed())
	t.Logf("the environment stopped in %s", time.Since(stopBegan).Round(100*time.Millisecond))
	g.Expect(node.podLinks).NotTo(BeEmpty(), "the Pods' veths on the bridge as Stop began")
	expectNoNodeLeftovers(g, node)
	_, err = os.Stat(filepath.Join("/var/log/pods", podLogs))
	g.Expect(errors.Is(err, os.ErrNotExist)).To(BeTrue(), "the Pod's log folder in /var/log/pods: %v", err)
}

// A node whose processes were killed without Stop (a launcher killed at a
// test's timeout) leaves its shims, containers, mounts, cgroups, bridge and
// chains; the next real node removes them before it starts, and its own
// Stop leaves nothing of either.
func TestARealNodeRemovesWhatAKilledOneLeft(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the control plane and a real node, twice")
	}
	assets := realNodeAssets(t)
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	first, _ := startRealNode(ctx, t, assets)
	deploy, _, _ := deployEcho(ctx, g, first, "default")
	g.Eventually(func(g Gomega) {
		g.Expect(first.Client.Get(ctx, client.ObjectKeyFromObject(deploy), deploy)).To(Succeed())
		g.Expect(deploy.Status.AvailableReplicas).To(Equal(int32(1)))
	}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())
	// The node dies as with its launcher: SIGKILL to its processes (their
	// parent-death signal), CoreDNS and kube-router among them, and its
	// relays on the bridge close with the launcher's sockets; nothing is
	// cleaned. A CoreDNS left running kept its watch of the API server
	// open, and kube-apiserver waited for it a whole minute as it stopped.
	killed := first.Node
	killed.podLinks = bridgePorts()
	g.Expect(killed.podLinks).NotTo(BeEmpty(), "the Pod's veth on the bridge")
	for _, p := range []*Process{killed.DNS, killed.KubeRouter, killed.KubeProxy, killed.Kubelet, killed.Containerd} {
		g.Expect(p.Kill()).To(Succeed())
	}
	g.Expect(killed.Scheduler.Stop(0)).To(Succeed()) // supervised: Kill would restart it
	for _, p := range killed.proxies {
		g.Expect(p.Close()).To(Succeed())
	}
	first.Node = nil
	// The rest stops as usual; an error there is not what this story is
	// about.
	if err := first.Stop(); err != nil {
		t.Logf("stopping the first environment: %v", err)
	}
	_, err := os.Stat(killed.Dir)
	g.Expect(err).NotTo(HaveOccurred(), "the killed node should have left its folder")
	// Only now the machine's node lock goes: a real node of another test
	// binary waiting on it would clean the leftovers before this one sees
	// them, as the next node on the machine should.
	killed.lock.Close()

	second, stopped := startRealNode(ctx, t, assets)
	node := second.Node
	g.Expect(second.Stop()).To(Succeed())
	*stopped = true
	expectNoNodeLeftovers(g, killed)
	expectNoNodeLeftovers(g, node)
}
