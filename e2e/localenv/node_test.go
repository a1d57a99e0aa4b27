package localenv

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// testWriter sends the environment's progress lines to the test log, each
// with the time since the writer was made, so a slow step shows.
type testWriter struct {
	t     *testing.T
	began time.Time
}

func newTestWriter(t *testing.T) testWriter { return testWriter{t: t, began: time.Now()} }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Logf("%6.1fs %s", time.Since(w.began).Seconds(), strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// A real node runs a Deployment of an image built here and pushed to the
// launcher's registry: it becomes Available on the kubelet, its Pod gets
// an address of the bridge, and a request from this process to the
// Service's cluster IP (kube-proxy's rules) reaches it. Stopping the
// environment leaves no process, mount, bridge, chain or Pod log folder
// behind.
func TestARealNodeServesADeploymentThroughItsService(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the control plane and a real node")
	}
	assets := realNodeAssets(t)
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	env, stopped := startRealNode(ctx, t, assets)
	deploy, svc, labels := deployEcho(ctx, g, env, "default")

	created := time.Now()
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(deploy), deploy)).To(Succeed())
		g.Expect(deploy.Status.AvailableReplicas).To(Equal(int32(1)))
	}).WithContext(ctx).WithTimeout(3*time.Minute).WithPolling(500*time.Millisecond).Should(Succeed(), func() string {
		return podReport(ctx, env, "default") + "\n" + Tail(env.Node.Kubelet.LogPath, 20)
	})
	t.Logf("the Deployment was Available %s after it was created", time.Since(created).Round(100*time.Millisecond))

	pods := &corev1.PodList{}
	g.Expect(env.Client.List(ctx, pods, client.InNamespace("default"), client.MatchingLabels(labels))).To(Succeed())
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
		ObjectMeta: metav1.ObjectMeta{Name: "outside", Namespace: "default"},
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

	node := env.Node
	stopBegan := time.Now()
	g.Expect(env.Stop()).To(Succeed())
	*stopped = true
	t.Logf("the environment stopped in %s", time.Since(stopBegan).Round(100*time.Millisecond))
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
	// parent-death signal), nothing cleaned; the rest stops as usual.
	killed := first.Node
	for _, p := range []*Process{killed.KubeProxy, killed.Kubelet, killed.Containerd} {
		g.Expect(p.Kill()).To(Succeed())
	}
	g.Expect(killed.Scheduler.Stop(0)).To(Succeed()) // supervised: Kill would restart it
	first.Node = nil
	// The rest stops as usual, except that kube-apiserver, whose node
	// vanished under it, has been seen to outlast its stop timeout on a
	// loaded machine: that is not what this story is about.
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

// realNodeAssets returns the folder of kubelet & co., skipping the test
// when a real node cannot start here.
func realNodeAssets(t *testing.T) string {
	t.Helper()
	assets, err := RealNodeAssets()
	if err != nil {
		t.Skipf("no real node on this machine: %v", err)
	}
	return assets
}

// startRealNode starts an environment with a real node and none of
// Plumb's controllers (no node story of this package needs them, and
// building them is most of a start on a loaded machine), stopped at the
// test's end unless the test set *stopped.
func startRealNode(ctx context.Context, t *testing.T, assets string, with ...func(*Options)) (*Env, *bool) {
	t.Helper()
	began := time.Now()
	opts := Options{AssetsDir: assets, Node: NodeReal, NoControllers: true, Progress: newTestWriter(t)}
	for _, f := range with {
		f(&opts)
	}
	env, err := Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	stopped := new(bool)
	t.Cleanup(func() {
		if t.Failed() {
			logNodeTails(t, env.Node)
		}
		if !*stopped {
			_ = env.Stop()
		}
	})
	t.Logf("the environment with a real node started in %s", time.Since(began).Round(100*time.Millisecond))
	return env, stopped
}

// logNodeTails logs the last lines of the kubelet's and kube-proxy's logs,
// for a failed story: they go with the environment's state folder.
func logNodeTails(t *testing.T, n *Node) {
	t.Helper()
	if n == nil {
		return
	}
	for _, p := range []*Process{n.Kubelet, n.KubeProxy} {
		if p != nil {
			t.Logf("---- %s (last lines of %s)\n%s", p.Name, p.LogPath, Tail(p.LogPath, 30))
		}
	}
}

// deployEcho builds the echo server's image into env's registry and
// creates its Deployment (one replica, run as Plumb's own are) and Service
// in namespace.
func deployEcho(ctx context.Context, g Gomega, env *Env, namespace string) (*appsv1.Deployment, *corev1.Service, map[string]string) {
	image, err := env.Registry.BuildAndPush(ctx, env.Root, "./e2e/localenv/testdata/echo", "v1")
	g.Expect(err).NotTo(HaveOccurred())

	labels := map[string]string{"app": "echo"}
	deploy := oneReplica(namespace, "echo", labels, corev1.Container{
		Name:  "echo",
		Image: image,
		Ports: []corev1.ContainerPort{{ContainerPort: 8080}},
		ReadinessProbe: &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(8080)}},
			PeriodSeconds: 1,
		},
		// As Plumb's own Deployments run (deploy/).
		SecurityContext: asPlumbRuns(),
	})
	g.Expect(env.Client.Create(ctx, deploy)).To(Succeed())
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "echo", Namespace: namespace},
		Spec: corev1.ServiceSpec{
			Selector: labels,
			Ports:    []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}},
		},
	}
	g.Expect(env.Client.Create(ctx, svc)).To(Succeed())
	return deploy, svc, labels
}

// oneReplica is a Deployment of one Pod of container in namespace,
// without a service-account token (the test programs have no use for one).
func oneReplica(namespace, name string, labels map[string]string, container corev1.Container) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					AutomountServiceAccountToken: ptr.To(false),
					Containers:                   []corev1.Container{container},
				},
			},
		},
	}
}

// startRealNodeStory skips a story in -short mode or where no real node
// can start, and otherwise starts one (stopped at the test's end) for at
// most timeout.
func startRealNodeStory(t *testing.T, timeout time.Duration, with ...func(*Options)) (context.Context, Gomega, *Env) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts the control plane and a real node")
	}
	assets := realNodeAssets(t)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	env, _ := startRealNode(ctx, t, assets, with...)
	return ctx, NewWithT(t), env
}

// asPlumbRuns is the container security context of Plumb's own
// Deployments (deploy/): non-root, a read-only root filesystem, no
// privilege escalation nor capabilities, and the RuntimeDefault seccomp
// profile, which needs runc built with seccomp.
func asPlumbRuns() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		RunAsNonRoot:             ptr.To(true),
		AllowPrivilegeEscalation: ptr.To(false),
		ReadOnlyRootFilesystem:   ptr.To(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// expectNoNodeLeftovers fails when a stopped node left a process, a mount,
// a cgroup, the bridge or one of its chains on the machine.
func expectNoNodeLeftovers(g Gomega, node *Node) {
	_, err := os.Stat("/sys/class/net/" + bridgeName)
	g.Expect(errors.Is(err, os.ErrNotExist)).To(BeTrue(), "the bridge %s: %v", bridgeName, err)
	_, err = os.Stat(node.Dir)
	g.Expect(errors.Is(err, os.ErrNotExist)).To(BeTrue(), "the node's folder %s: %v", node.Dir, err)

	mounts, err := os.ReadFile("/proc/self/mountinfo")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(mounts)).NotTo(ContainSubstring(node.Dir))

	// Every process naming the node's folder: containerd, its shims, the
	// containers' runc, kubelet.
	procs, err := os.ReadDir("/proc")
	g.Expect(err).NotTo(HaveOccurred())
	for _, p := range procs {
		cmdline, err := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
		if err != nil {
			continue // not a process, or gone meanwhile
		}
		g.Expect(string(cmdline)).NotTo(ContainSubstring(node.Dir), "process %s", p.Name())
	}

	cgroups, err := filepath.Glob("/sys/fs/cgroup/*/kubepods")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cgroups).To(BeEmpty())

	for _, table := range []string{"nat", "filter", "mangle"} {
		out, err := exec.Command("iptables", "-w", "5", "-t", table, "-S").CombinedOutput()
		g.Expect(err).NotTo(HaveOccurred(), string(out))
		for _, line := range strings.Split(string(out), "\n") {
			f := strings.Fields(line)
			if len(f) >= 2 && f[0] == "-N" {
				g.Expect(ourChain(f[1])).To(BeFalse(), "chain %s left in table %s", f[1], table)
			}
		}
	}
}

// podReport lists the Pods of namespace with their phase and the reasons
// their containers wait, for a failed wait's message.
func podReport(ctx context.Context, env *Env, namespace string) string {
	pods := &corev1.PodList{}
	if err := env.Client.List(ctx, pods, client.InNamespace(namespace)); err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, p := range pods.Items {
		b.WriteString(p.Name + " " + string(p.Status.Phase) + " node=" + p.Spec.NodeName)
		for _, c := range p.Status.Conditions {
			if c.Status != corev1.ConditionTrue {
				b.WriteString(" " + string(c.Type) + "=" + string(c.Status) + "(" + c.Reason + ": " + c.Message + ")")
			}
		}
		for _, cs := range p.Status.ContainerStatuses {
			if cs.State.Waiting != nil {
				b.WriteString(" waiting " + cs.State.Waiting.Reason + ": " + cs.State.Waiting.Message)
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}
