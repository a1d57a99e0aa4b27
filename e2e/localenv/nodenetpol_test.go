package localenv

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Plumb's own ingress NetworkPolicies (deploy/network-policies/ingress.yaml,
// as installed) are enforced on the real node by kube-router: with Pods
// standing in for source-controller and render-controller in plumb-system,
// render-controller reaches source-controller's artifact port, and a Pod
// in another namespace is refused; before the policies, both reached it,
// so what refuses is the policy.
func TestARealNodeEnforcesPlumbsNetworkPolicies(t *testing.T) {
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if err := PolicyEngineUnavailable(filepath.Join(root, "bin", "node")); err != nil {
		t.Skipf("no NetworkPolicy engine on this machine: %v", err)
	}
	// The shared node runs kube-router whenever it can (sharedNode).
	ctx, g, env, _ := onSharedNode(t, "plumb-system", 10*time.Minute)

	image, err := env.Registry.BuildAndPush(ctx, env.Root, "./e2e/localenv/testdata/echo", "v1")
	g.Expect(err).NotTo(HaveOccurred())
	for _, ns := range []string{"plumb-system", "elsewhere"} {
		err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		g.Expect(err == nil || apierrors.IsAlreadyExists(err)).To(BeTrue(), "namespace %s: %v", ns, err)
	}
	source := echoPod(image, "plumb-system", "source-controller")
	render := echoPod(image, "plumb-system", "render-controller")
	stranger := echoPod(image, "elsewhere", "stranger")
	for _, pod := range []*corev1.Pod{source, render, stranger} {
		// The namespace's default ServiceAccount, which admission wants,
		// comes from kube-controller-manager a moment after the namespace.
		g.Eventually(func() error { return env.Client.Create(ctx, pod) }).
			WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "plumb-system", Name: "source-controller"},
		Spec: corev1.ServiceSpec{
			Selector: source.Labels,
			Ports:    []corev1.ServicePort{{Name: "http", Port: 9090, TargetPort: intstr.FromString("http")}},
		},
	}
	g.Expect(env.Client.Create(ctx, svc)).To(Succeed())
	for _, pod := range []*corev1.Pod{source, render, stranger} {
		g.Eventually(func(g Gomega) {
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(pod), pod)).To(Succeed())
			g.Expect(pod.Status.PodIP).NotTo(BeEmpty())
			g.Expect(podReady(pod)).To(BeTrue(), "%s/%s Ready", pod.Namespace, pod.Name)
		}).WithContext(ctx).WithTimeout(3*time.Minute).WithPolling(500*time.Millisecond).Should(Succeed(), func() string {
			return Tail(env.Node.Kubelet.LogPath, 20)
		})
	}
	// Through the Service (kube-proxy's DNAT, then the policy on the Pod's
	// address) and to the Pod's address itself.
	targets := []string{
		"http://source-controller.plumb-system.svc.cluster.local:9090/",
		"http://" + net.JoinHostPort(source.Status.PodIP, "8080") + "/",
	}
	answers := func(g Gomega, from *corev1.Pod, target string) {
		status, body, err := FetchFrom(ctx, from, target)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(status).To(Equal(http.StatusOK), "%s/%s → %s: %s", from.Namespace, from.Name, target, body)
		g.Expect(body).To(ContainSubstring("hello from source-controller"))
	}
	for _, from := range []*corev1.Pod{render, stranger} {
		for _, target := range targets {
			g.Eventually(func(g Gomega) { answers(g, from, target) }).
				WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
		}
	}

	policies := plumbIngressPolicies(g, env.Root)
	g.Expect(policies).NotTo(BeEmpty())
	for _, p := range policies {
		g.Expect(env.Client.Create(ctx, p)).To(Succeed())
	}
	applied := time.Now()
	// Refused: the stranger's own Pod answers (so it was asked), and says
	// its request failed.
	for _, target := range targets {
		g.Eventually(func(g Gomega) {
			status, body, err := FetchFrom(ctx, stranger, target)
			g.Expect(err).NotTo(HaveOccurred(), "the stranger Pod itself answers")
			g.Expect(status).To(Equal(http.StatusBadGateway), "elsewhere/stranger → %s: %s", target, body)
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed(), func() string {
			return filterRules() + "\n" + ipSets() + "\n" + Tail(env.Node.KubeRouter.LogPath, 20)
		})
	}
	t.Logf("kube-router enforced plumb-system's policies %s after they were created", time.Since(applied).Round(100*time.Millisecond))
	// Allowed: render-controller in plumb-system, to the named port.
	for _, target := range targets {
		g.Eventually(func(g Gomega) { answers(g, render, target) }).
			WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
	}
	status, body, err := FetchFrom(ctx, stranger, targets[0])
	g.Expect(err).NotTo(HaveOccurred())
	t.Logf("elsewhere/stranger → %s: %d %s", targets[0], status, body)
}

// echoPod is a bare Pod of the echo image in namespace, labelled as Plumb's
// component name is (app.kubernetes.io/name), with its port named http as
// Plumb's Deployments name theirs.
func echoPod(image, namespace, name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: map[string]string{"app.kubernetes.io/name": name}},
		Spec: corev1.PodSpec{
			AutomountServiceAccountToken: ptr.To(false),
			Containers: []corev1.Container{{
				Name: "echo", Image: image, SecurityContext: asPlumbRuns(),
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
				ReadinessProbe: &corev1.Probe{
					ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromString("http")}},
					PeriodSeconds: 1,
				},
			}},
		},
	}
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// plumbIngressPolicies are the NetworkPolicies of
// deploy/network-policies/ingress.yaml, as `kubectl apply` would create them.
func plumbIngressPolicies(g Gomega, root string) []*networkingv1.NetworkPolicy {
	f, err := os.Open(filepath.Join(root, "deploy", "network-policies", "ingress.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	defer f.Close()
	dec := yaml.NewYAMLOrJSONDecoder(f, 4096)
	var policies []*networkingv1.NetworkPolicy
	for {
		p := &networkingv1.NetworkPolicy{}
		err := dec.Decode(p)
		if errors.Is(err, io.EOF) {
			return policies
		}
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(p.Kind).To(Equal("NetworkPolicy"), fmt.Sprintf("%s/%s", p.Namespace, p.Name))
		policies = append(policies, p)
	}
}

// filterRules is the filter table's rules, for a failure's report.
func filterRules() string {
	out, err := exec.Command("iptables", "-w", "5", "-t", "filter", "-S").CombinedOutput()
	if err != nil {
		return fmt.Sprintf("iptables -S: %v: %s", err, out)
	}
	return string(out)
}

// ipSets is the machine's IP sets, for a failure's report.
func ipSets() string {
	out, err := exec.Command("ipset", "list").CombinedOutput()
	if err != nil {
		return fmt.Sprintf("ipset list: %v: %s", err, out)
	}
	return string(out)
}
