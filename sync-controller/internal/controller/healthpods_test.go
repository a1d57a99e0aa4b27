package controller

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/health"
	"plumb.dev/pkg/object"
	"plumb.dev/sync-controller/internal/engine"
)

// webPod creates Pod name of Deployment "web" (its selector app=web, and
// hash as pod-template-hash) and writes status as the kubelet would.
func webPod(t *testing.T, ctx context.Context, ns, name, hash string, status corev1.PodStatus) {
	t.Helper()
	g := NewWithT(t)
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": "web", "pod-template-hash": hash}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "app", Image: "registry.example/app:" + hash,
			ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromInt32(8080)}}},
		}}},
	}
	g.Expect(env.Client.Create(ctx, p)).To(Succeed())
	p.Status = status
	g.Expect(env.Client.Status().Update(ctx, p)).To(Succeed())
}

func notReadyStatus(cs corev1.ContainerStatus) corev1.PodStatus {
	return corev1.PodStatus{
		Phase: corev1.PodRunning,
		Conditions: []corev1.PodCondition{{
			Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady", Message: "containers with unready status: [app]",
		}},
		ContainerStatuses: []corev1.ContainerStatus{cs},
	}
}

var crashLooping = notReadyStatus(corev1.ContainerStatus{
	Name: "app", Image: "registry.example/app:new", RestartCount: 5,
	State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 2m40s restarting failed container"}},
	LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 3, Reason: "Error"}},
})

// A health wait that times out on a Deployment says why from its Pods:
// the crash-looping container, its last exit and restarts.
func TestATimedOutWaitNamesTheCrashLoopingContainer(t *testing.T) {
	ctx, ks := newKustomization(t, func(ks *kustomizev1.Kustomization) {
		ks.Spec.Wait = true
		ks.Spec.Timeout = &metav1.Duration{Duration: 3 * time.Second}
	})
	webPod(t, ctx, ks.Namespace, "web-new-1", "new", crashLooping)
	render(t, ks, "main@sha1:p1", deployment(ks.Namespace, "web", 2))
	msg := waitNotReady(t, ks, kustomizev1.HealthCheckFailedReason)
	NewWithT(t).Expect(msg).To(And(
		ContainSubstring("timed out waiting for health: Deployment/"+ks.Namespace+"/web is Progressing"),
		ContainSubstring("Pod web-new-1 container app is CrashLoopBackOff (last exit 3, Error, 5 restarts)")))
}

// A Deployment past its progress deadline because its new Pods never pass
// their readiness probe fails the wait at once, with the Pod's condition;
// the old ReplicaSet and its Pod are left as they are; the Pods listed are
// those of the new ReplicaSet, a bounded page of them.
func TestReadinessThatNeverPassesFailsTheWaitWithThePodCondition(t *testing.T) {
	g := NewWithT(t)
	ctx, ks := newKustomization(t, func(ks *kustomizev1.Kustomization) { ks.Spec.Wait = true })
	ns := ks.Namespace
	render(t, ks, "main@sha1:p2", deployment(ns, "web", 2))
	d := &appsv1.Deployment{}
	g.Eventually(func() error { return env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, d) }, 30*time.Second).Should(Succeed())

	// What kube-controller-manager and the kubelet would have made: the
	// old ReplicaSet's Pod serving, and 30 Pods of the new one, never ready.
	for rev, hash := range map[string]string{"1": "old", "2": "new"} {
		rs := &appsv1.ReplicaSet{
			ObjectMeta: metav1.ObjectMeta{
				Name: "web-" + hash, Namespace: ns,
				Labels:          map[string]string{"app": "web", "pod-template-hash": hash},
				Annotations:     map[string]string{"deployment.kubernetes.io/revision": rev},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: d.UID, Controller: ptr.To(true)}},
			},
			Spec: appsv1.ReplicaSetSpec{
				Replicas: ptr.To[int32](1),
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web", "pod-template-hash": hash}},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web", "pod-template-hash": hash}},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:" + hash}}},
				},
			},
		}
		g.Expect(env.Client.Create(ctx, rs)).To(Succeed())
	}
	webPod(t, ctx, ns, "web-old-1", "old", corev1.PodStatus{
		Phase:             corev1.PodRunning,
		Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}},
	})
	for i := range 30 {
		webPod(t, ctx, ns, fmt.Sprintf("web-new-%02d", i), "new", notReadyStatus(corev1.ContainerStatus{
			Name: "app", Started: ptr.To(true), State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
		}))
	}
	g.Expect(env.Client.Patch(ctx, d, client.RawPatch(types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"deployment.kubernetes.io/revision":"2"}}}`)))).To(Succeed())
	before := requestsByKind(ns)["get pods"]
	d.Status = appsv1.DeploymentStatus{
		ObservedGeneration: d.Generation, Replicas: 3, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1,
		Conditions: []appsv1.DeploymentCondition{{
			Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded",
			Message: `ReplicaSet "web-new" has timed out progressing.`,
		}},
	}
	g.Expect(env.Client.Status().Update(ctx, d)).To(Succeed())

	msg := waitNotReady(t, ks, kustomizev1.HealthCheckFailedReason)
	g.Expect(msg).To(And(
		ContainSubstring("Deployment/"+ns+"/web is Degraded: rollout exceeded its progress deadline"),
		MatchRegexp(`Pod web-new-\d\d container app is not ready: readiness probe failing \(Pod condition Ready=False ContainersNotReady\) \(and 9 more Pods\)`)))
	g.Expect(msg).NotTo(ContainSubstring("web-old"))
	g.Expect(requestsByKind(ns)["get pods"] - before).To(BeNumerically(">=", 1))
	for _, name := range []string{"web-old", "web-new"} {
		g.Expect(exists(ctx, g, &appsv1.ReplicaSet{}, ns, name)).To(BeTrue(), "ReplicaSet %s is left alone", name)
	}
	g.Expect(exists(ctx, g, &corev1.Pod{}, ns, "web-old-1")).To(BeTrue(), "the old Pod still serves")
}

// An event reporting a Degraded workload keeps what changes between
// retries (its Pods' restart counts) out of its message, so a failure that
// stays the same is alerted as the same news; the condition keeps it all.
func TestADegradedEventLeavesThePodFiguresVolatile(t *testing.T) {
	g := NewWithT(t)
	err := fmt.Errorf("wave 0: %w", &engine.HealthDegradedError{
		Report: engine.HealthReport{ID: object.ID{Group: "apps", Kind: "Deployment", Namespace: "apps", Name: "web"},
			Result: health.Result{Status: health.Degraded, Message: "rollout exceeded its progress deadline"}},
		Pods: "Pod web-1 container app is CrashLoopBackOff (last exit 3, Error, 5 restarts)",
	})
	g.Expect(err.Error()).To(Equal("wave 0: Deployment/apps/web is Degraded: rollout exceeded its progress deadline; Pod web-1 container app is CrashLoopBackOff (last exit 3, Error, 5 restarts)"))
	msg, _ := eventOf(err)
	g.Expect(msg).To(Equal("wave 0: Deployment/apps/web is Degraded: rollout exceeded its progress deadline"))
}
