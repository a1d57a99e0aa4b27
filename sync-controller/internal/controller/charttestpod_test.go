package controller

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "plumb.dev/api/helm/v2"
)

// chartTestPodAlways is a test Pod without restartPolicy: Always, the
// API's default.
func chartTestPodAlways(ns, name, weight string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
  namespace: %s
  annotations: {helm.sh/hook: test, helm.sh/hook-weight: %q}
spec:
  containers:
  - name: test
    image: registry.example/busybox:1.0
`, name, ns, weight)
}

// runPod writes what the kubelet writes of a Pod whose container runs
// and is ready (envtest runs none).
func runPod(t *testing.T, ctx context.Context, ns, name string) {
	t.Helper()
	NewWithT(t).Eventually(func() error {
		pod := &corev1.Pod{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pod); err != nil {
			return err
		}
		now := metav1.Now()
		pod.Status.Phase = corev1.PodRunning
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now}}
		pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "test", Image: "registry.example/busybox:1.0", Ready: true,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}}}
		return env.Client.Status().Update(ctx, pod)
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
}

// TestATestPodPassesOnlyOnceItSucceeded: a test Pod with restartPolicy
// Always counts as Helm counts it, by its phase: running and Ready is not
// passed — it passes once Succeeded, and one that keeps running fails at
// test.timeout, saying that such a Pod never completes.
func TestATestPodPassesOnlyOnceItSucceeded(t *testing.T) {
	g := NewWithT(t)
	ctx, hr := newHelmRelease(t, withTests(helmv2.Test{Enable: true, Timeout: &metav1.Duration{Duration: 10 * time.Second}}))
	ns := hr.Namespace
	renderRelease(t, hr, "1.0.0", "", strings.Join([]string{
		chartTestPodAlways(ns, "ends", "0"),
		chartTestPodAlways(ns, "serves", "1"),
		configMaps(ns, "settings"),
	}, "---\n"))

	g.Eventually(func(g Gomega) bool { return podExists(ctx, g, ns, "ends") }, 30*time.Second).Should(BeTrue())
	runPod(t, ctx, ns, "ends")
	g.Consistently(func(g Gomega) map[string]string { return testPhases(getRelease(g, hr)) }, time.Second, 100*time.Millisecond).
		Should(HaveKeyWithValue("ends", helmv2.TestHookPhaseRunning), "running and Ready is not passed")
	g.Expect(podExists(ctx, g, ns, "serves")).To(BeFalse(), "the next test waits for this one")
	endPod(t, ctx, ns, "ends", true)

	g.Eventually(func(g Gomega) bool { return podExists(ctx, g, ns, "serves") }, 30*time.Second).Should(BeTrue())
	runPod(t, ctx, ns, "serves")
	var got *helmv2.HelmRelease
	g.Eventually(func(g Gomega) {
		got = getRelease(g, hr)
		c := conditions.Get(got, helmv2.TestSuccessCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
	}, time.Minute, 100*time.Millisecond).Should(Succeed())
	g.Expect(testPhases(got)).To(Equal(map[string]string{"ends": helmv2.TestHookPhaseSucceeded, "serves": helmv2.TestHookPhaseFailed}))
	g.Expect(conditions.GetMessage(got, helmv2.TestSuccessCondition)).To(ContainSubstring(
		"test serves: pod serves is running but did not complete within 10s: a test Pod passes once it has succeeded, which a Pod with restartPolicy Always never does"))
}
