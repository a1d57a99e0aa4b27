package localenv

import (
	"context"
	"errors"
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
	// The shared node holds the machine's one node: this one would wait
	// for it until the package's end.
	if err := stopSharedNode(); err != nil {
		t.Fatalf("stopping the shared real node: %v", err)
	}
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
// a Pod's veth, a cgroup, the bridge or one of its chains on the machine.
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

	// The host ends of the Pods' veths, which go with the Pods' network
	// namespaces.
	for _, link := range node.podLinks {
		_, err := os.Stat(filepath.Join("/sys/class/net", link))
		g.Expect(errors.Is(err, os.ErrNotExist)).To(BeTrue(), "the Pod's veth %s: %v", link, err)
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
