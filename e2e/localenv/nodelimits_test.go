package localenv

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"plumb.dev/pkg/health"
)

// A container that allocates more than its memory limit is killed by the
// kernel (the cgroup's limit, which the kubelet set from the Pod's
// resources), not by anyone deleting it: its status says OOMKilled with
// exit code 137, the kubelet restarts it, and Plumb's health of the
// Deployment names the kill in the Pod detail of its message. With a
// limit that fits, the Deployment rolls out and is Healthy.
func TestARealNodeOOMKillsAContainerOverItsMemoryLimit(t *testing.T) {
	ctx, g, env, ns := onSharedNode(t, "oom", 10*time.Minute)

	image, err := env.Registry.BuildAndPush(ctx, env.Root, "./e2e/localenv/testdata/memhog", "v1")
	g.Expect(err).NotTo(HaveOccurred())
	labels := map[string]string{"app": "memhog"}
	// 96 MiB held under a 32 MiB limit: the request equals the limit, a
	// Guaranteed Pod, the class the kernel would spare longest on a
	// normal node.
	limit := resource.MustParse("32Mi")
	deploy := oneReplica(ns, "memhog", labels, corev1.Container{
		Name:  "memhog",
		Image: image,
		Env:   []corev1.EnvVar{{Name: "MEMHOG_MIB", Value: "96"}},
		Resources: corev1.ResourceRequirements{
			Limits:   corev1.ResourceList{corev1.ResourceMemory: limit, corev1.ResourceCPU: resource.MustParse("100m")},
			Requests: corev1.ResourceList{corev1.ResourceMemory: limit, corev1.ResourceCPU: resource.MustParse("100m")},
		},
		ReadinessProbe: &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(8080)}},
			PeriodSeconds: 1,
		},
		SecurityContext: asPlumbRuns(),
	})
	g.Expect(env.Client.Create(ctx, deploy)).To(Succeed())

	// The kernel's kill, as the kubelet reports it, and a restart.
	var killed corev1.ContainerStatus
	g.Eventually(func(g Gomega) {
		pod := onlyPod(ctx, g, env, ns, labels)
		g.Expect(pod.Status.ContainerStatuses).To(HaveLen(1))
		killed = pod.Status.ContainerStatuses[0]
		g.Expect(killed.RestartCount).To(BeNumerically(">=", 1), "restarted by the kubelet")
		last := killed.LastTerminationState.Terminated
		g.Expect(last).NotTo(BeNil(), "a last termination")
		g.Expect(last.Reason).To(Equal("OOMKilled"))
		g.Expect(last.ExitCode).To(Equal(int32(137)), "SIGKILL")
	}).WithContext(ctx).WithTimeout(3*time.Minute).WithPolling(500*time.Millisecond).Should(Succeed(), func() string {
		return podReport(ctx, env, ns) + "\n" + Tail(env.Node.Kubelet.LogPath, 20)
	})
	t.Logf("memhog: restarted %d times, last %s (exit %d)", killed.RestartCount, killed.LastTerminationState.Terminated.Reason, killed.LastTerminationState.Terminated.ExitCode)

	// Plumb's health of the Deployment, as sync-controller reports an
	// unhealthy workload: not Healthy, and the Pod detail names the kill.
	var message string
	g.Eventually(func(g Gomega) {
		r := deploymentHealth(ctx, g, env, deploy)
		g.Expect(r.Status).To(Or(Equal(health.Progressing), Equal(health.Degraded)))
		message = r.Message
		g.Expect(message).To(ContainSubstring("container memhog"))
		g.Expect(message).To(ContainSubstring("OOMKilled"))
		g.Expect(message).To(ContainSubstring("137"))
	}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())
	t.Logf("Plumb's health of the Deployment: %s", message)

	// The same program with a limit it fits in rolls out and is Healthy:
	// what was killed was the limit, not the program.
	g.Expect(env.Client.Patch(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "memhog"}},
		client.RawPatch(types.StrategicMergePatchType, []byte(`{"spec":{"template":{"spec":{"containers":[{"name":"memhog","resources":{"limits":{"memory":"256Mi"},"requests":{"memory":"256Mi"}}}]}}}}`)))).To(Succeed())
	g.Eventually(func(g Gomega) {
		r := deploymentHealth(ctx, g, env, deploy)
		g.Expect(r.Status).To(Equal(health.Healthy), r.Message)
	}).WithContext(ctx).WithTimeout(3*time.Minute).WithPolling(500*time.Millisecond).Should(Succeed(), func() string { return podReport(ctx, env, ns) })
}

// onlyPod is the one live Pod matching labels in namespace.
func onlyPod(ctx context.Context, g Gomega, env *Env, namespace string, labels map[string]string) *corev1.Pod {
	pods := &corev1.PodList{}
	g.Expect(env.Client.List(ctx, pods, client.InNamespace(namespace), client.MatchingLabels(labels))).To(Succeed())
	var live []corev1.Pod
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			live = append(live, p)
		}
	}
	g.Expect(live).To(HaveLen(1))
	return &live[0]
}

// deploymentHealth is pkg/health's verdict on the live Deployment with
// the Pod detail sync-controller appends to an unhealthy one.
func deploymentHealth(ctx context.Context, g Gomega, env *Env, d *appsv1.Deployment) health.Result {
	live := &appsv1.Deployment{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(d), live)).To(Succeed())
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(live)
	g.Expect(err).NotTo(HaveOccurred())
	obj := &unstructured.Unstructured{Object: m}
	obj.SetAPIVersion("apps/v1")
	obj.SetKind("Deployment")
	r := health.Evaluate(obj)
	return health.WithPods(ctx, obj, r, health.ListerFor(env.Client))
}
