package e2e

import (
	"context"
	"io"
	"net"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	"plumb.dev/e2e/localenv"
)

// TestWhyAReleaseFailsOnARealNode: on a real kubelet, what a failed
// release says is what the Pods say. The PreSync hook's log is printed by
// `plumb logs --kustomization --hook`; a commit whose image crashes at
// start turns the Kustomization Ready=False HealthCheckFailed naming the
// container, its last exit code and reason; a commit whose readiness probe
// never passes does the same with the Pod's condition; and through both
// the first release's Pods keep serving.
func TestWhyAReleaseFailsOnARealNode(t *testing.T) {
	d := startRealNodeDemo(t, "release-fails", 12*time.Minute)
	g := NewWithT(t)
	ctx, own, demo, clone, key := d.ctx, d.own, d.demo, d.clone, d.key
	waitAttempted := func(rev string, check func(g Gomega, k *kustomizev1.Kustomization)) {
		k := &kustomizev1.Kustomization{}
		g.Eventually(func(g Gomega) {
			g.Expect(own.Client.Get(ctx, key, k)).To(Succeed())
			g.Expect(k.Status.LastAttemptedRevision).To(Equal(revision(rev)))
			check(g, k)
		}).WithTimeout(4 * time.Minute).WithPolling(poll).Should(Succeed())
		t.Logf("Ready: %s", conditions.GetMessage(k, meta.ReadyCondition))
	}

	// The PreSync hook really ran; `plumb logs` prints its Pod's log.
	logs := plumbAgainst(ctx, t, own.Kubeconfig, "logs", "--kustomization", "demo", "-n", demo.Namespace, "--hook")
	g.Expect(logs).To(MatchRegexp(`(?m)^\[pod/hello-migrate-\S+/migrate\] step 2/2$`))
	for _, l := range strings.Split(strings.TrimSpace(logs), "\n") {
		g.Expect(l).To(HavePrefix("[pod/hello-migrate-"), "only the hooks' Pods")
	}

	serves := helloServes(ctx, g, own, demo)
	g.Eventually(serves).WithTimeout(time.Minute).WithPolling(poll).Should(ContainSubstring("Hello from Plumb"))
	first := &appsv1.Deployment{}
	g.Expect(own.Client.Get(ctx, types.NamespacedName{Namespace: demo.AppNamespace, Name: "hello"}, first)).To(Succeed())
	firstRevision := first.Annotations["deployment.kubernetes.io/revision"]

	// Wait for the last wave too, 30 s, and retry a failure soon.
	g.Expect(own.Client.Patch(ctx, &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}},
		client.RawPatch(types.MergePatchType, []byte(`{"spec":{"wait":true,"timeout":"30s","retryInterval":"10s"}}`)))).To(Succeed())
	content, err := clone.Read("deployment.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	marker := "          readinessProbe:\n"
	g.Expect(content).To(ContainSubstring(marker))
	release := func(message, env string) string {
		g.Expect(clone.Write(map[string]string{"deployment.yaml": strings.Replace(content, marker, env+marker, 1)})).To(Succeed())
		sha, err := clone.CommitAndPush(ctx, message)
		g.Expect(err).NotTo(HaveOccurred())
		return sha
	}
	// failsWith waits until the sync of rev fails health, the Deployment's
	// Ready=False message naming a Pod of its newest ReplicaSet and what
	// it says.
	failsWith := func(rev, pod string) {
		deployment := regexp.QuoteMeta("Deployment/" + demo.AppNamespace + "/hello")
		waitAttempted(rev, func(g Gomega, k *kustomizev1.Kustomization) {
			ready := conditions.Get(k, meta.ReadyCondition)
			g.Expect(ready).NotTo(BeNil())
			g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(ready.Reason).To(Equal(kustomizev1.HealthCheckFailedReason))
			g.Expect(ready.Message).To(MatchRegexp(deployment + ` is (Progressing|Degraded): [^;]*; Pod hello-\S+ ` + pod))
		})
	}

	// A crash at start: the container, its last exit code and reason.
	crash := release("Crash at start", "            - name: EXIT_AT_START\n              value: \"3\"\n")
	failsWith(crash, `container web is CrashLoopBackOff \(last exit 3, Error, \d+ restarts?\)`)
	g.Expect(serves(g)).To(ContainSubstring("Hello from Plumb"), "the first release's Pods still serve")

	// A readiness probe that never passes: the Pod's condition.
	never := release("Never ready", "            - name: READY_AFTER\n              value: never\n")
	failsWith(never, `container web is not ready: readiness probe failing \(Pod condition Ready=False ContainersNotReady\)`)
	g.Expect(serves(g)).To(ContainSubstring("Hello from Plumb"), "the first release's Pods still serve")
	sets := &appsv1.ReplicaSetList{}
	g.Expect(own.Client.List(ctx, sets, client.InNamespace(demo.AppNamespace))).To(Succeed())
	kept := false
	for _, rs := range sets.Items {
		if rs.Annotations["deployment.kubernetes.io/revision"] == firstRevision {
			kept = rs.Status.ReadyReplicas == 2
		}
	}
	g.Expect(kept).To(BeTrue(), "the first ReplicaSet keeps its two ready Pods")
}

// TestTheSampleRunsOnARealNode is `make run NODE=real`'s sample as a
// story: its images, built here, pulled from the launcher's registry by a
// real kubelet; the PreSync Job really runs and its log says so; the web
// server's Pods pass their probes and answer through the Service's
// cluster IP; and a commit that makes the new image crash at start leaves
// the Kustomization not Ready with the container's exit in the Pods,
// while the old ReplicaSet keeps serving.
func TestTheSampleRunsOnARealNode(t *testing.T) {
	d := startRealNodeDemo(t, "sample-on-node", 10*time.Minute)
	g := NewWithT(t)
	ctx, own, demo, clone, key := d.ctx, d.own, d.demo, d.clone, d.key
	k := &kustomizev1.Kustomization{}

	// The Pods ran on the node, from the launcher's registry.
	pods := &corev1.PodList{}
	g.Expect(own.Client.List(ctx, pods, client.InNamespace(demo.AppNamespace))).To(Succeed())
	var hook string
	for _, p := range pods.Items {
		g.Expect(p.Spec.NodeName).To(Equal(localenv.NodeName), "Pod %s", p.Name)
		g.Expect(p.Spec.Containers[0].Image).To(HavePrefix(own.Registry.Addr+"/"), "Pod %s", p.Name)
		if p.Status.Phase == corev1.PodSucceeded {
			hook = p.Name
		}
	}
	g.Expect(hook).NotTo(BeEmpty(), "the PreSync Job's Pod succeeded")
	clientset, err := kubernetes.NewForConfig(own.Config)
	g.Expect(err).NotTo(HaveOccurred())
	logs, err := clientset.CoreV1().Pods(demo.AppNamespace).GetLogs(hook, &corev1.PodLogOptions{}).DoRaw(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(logs)).To(ContainSubstring("step 2/2"))

	// Through the Service, to a Pod that passed its readiness probe.
	get := helloServes(ctx, g, own, demo)
	g.Eventually(get).WithTimeout(time.Minute).WithPolling(poll).Should(ContainSubstring("Hello from Plumb"))

	// A bad release: the new image crashes at start. The health wait
	// times out on the Deployment; its Pods show the exit; the old Pods
	// still serve.
	g.Expect(own.Client.Patch(ctx, &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}},
		client.RawPatch(types.MergePatchType, []byte(`{"spec":{"wait":true,"timeout":"30s"}}`)))).To(Succeed())
	content, err := clone.Read("deployment.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	marker := "          readinessProbe:\n"
	g.Expect(content).To(ContainSubstring(marker))
	g.Expect(clone.Write(map[string]string{"deployment.yaml": strings.Replace(content, marker,
		"            - name: EXIT_AT_START\n              value: \"3\"\n"+marker, 1)})).To(Succeed())
	bad, err := clone.CommitAndPush(ctx, "Crash at start")
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func(g Gomega) {
		g.Expect(own.Client.Get(ctx, key, k)).To(Succeed())
		g.Expect(k.Status.LastAttemptedRevision).To(Equal(revision(bad)))
		g.Expect(conditions.IsFalse(k, meta.ReadyCondition)).To(BeTrue(), "Ready: %s", conditions.GetMessage(k, meta.ReadyCondition))
		g.Expect(conditions.GetMessage(k, meta.ReadyCondition)).To(ContainSubstring("Deployment/" + demo.AppNamespace + "/hello"))
	}).WithTimeout(3 * time.Minute).WithPolling(poll).Should(Succeed())
	t.Logf("Ready=False: %s", conditions.GetMessage(k, meta.ReadyCondition))
	g.Eventually(func(g Gomega) {
		g.Expect(own.Client.List(ctx, pods, client.InNamespace(demo.AppNamespace))).To(Succeed())
		var exits []int32
		for _, p := range pods.Items {
			for _, c := range p.Status.ContainerStatuses {
				if c.LastTerminationState.Terminated != nil {
					exits = append(exits, c.LastTerminationState.Terminated.ExitCode)
				}
			}
		}
		g.Expect(exits).To(ContainElement(int32(3)), "a container of the new ReplicaSet exited with 3 and was restarted")
	}).WithTimeout(time.Minute).WithPolling(poll).Should(Succeed())
	g.Expect(get(g)).To(ContainSubstring("Hello from Plumb"), "the old Pods still serve")
}

// helloServes returns a check that a GET of / through the sample's hello
// Service answers 200, returning the page.
func helloServes(ctx context.Context, g Gomega, own *localenv.Env, demo *localenv.Demo) func(Gomega) string {
	svc := &corev1.Service{}
	g.Expect(own.Client.Get(ctx, types.NamespacedName{Namespace: demo.AppNamespace, Name: "hello"}, svc)).To(Succeed())
	url := "http://" + net.JoinHostPort(svc.Spec.ClusterIP, "80") + "/"
	return func(g Gomega) string {
		resp, err := localenv.ServiceHTTPClient(2 * time.Second).Get(url)
		g.Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
		return string(body)
	}
}

// plumbAgainst runs the plumb CLI against a control plane of the test's
// own and fails the test when it fails.
func plumbAgainst(ctx context.Context, t *testing.T, kubeconfig string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, plumbCLI, args...)
	cmd.Env = append(cmd.Environ(), "KUBECONFIG="+kubeconfig)
	out, err := cmd.Output()
	t.Logf("$ plumb %s\n%s", strings.Join(args, " "), out)
	if err != nil {
		t.Fatalf("plumb %s: %v", strings.Join(args, " "), err)
	}
	return string(out)
}
