package controller

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/events"
)

// fightWriter sets a Deployment's spec.replicas to 3 and 4 in turn, as
// field manager "fighter", every period until stopped: each write is a real
// change, as an autoscaler's or a script's would be.
func fightWriter(t *testing.T, ctx context.Context, ns, name string, period time.Duration) (stop func() int) {
	t.Helper()
	done := make(chan struct{})
	var wg sync.WaitGroup
	writes := 0
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(period)
		defer tick.Stop()
		for n := int32(3); ; n = 7 - n {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			patch := []byte(`{"spec":{"replicas":` + string(rune('0'+n)) + `}}`)
			d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
			if err := env.Client.Patch(ctx, d, client.RawPatch(types.MergePatchType, patch), client.FieldOwner("fighter")); err == nil {
				writes++
			}
		}
	}()
	return func() int {
		close(done)
		wg.Wait()
		return writes
	}
}

func TestAFightBacksOffAndAlertsOnceWhileOtherDriftIsStillReverted(t *testing.T) {
	g := NewWithT(t)
	ctx, ks := newKustomization(t, func(ks *kustomizev1.Kustomization) {
		// The backoff is capped at the interval.
		ks.Spec.Interval = metav1.Duration{Duration: 20 * time.Second}
	})
	subscription := subscribeEvents(t, ks)
	render(t, ks, "main@sha1:f1", deployment(ks.Namespace, "web", 1)+"---\n"+configMaps(ks.Namespace, "other"))
	waitReady(t, ks, "main@sha1:f1")
	applyPath := "/apis/apps/v1/namespaces/" + ks.Namespace + "/deployments/web"
	requests.Reset()

	// 5 writes per second for 60 seconds.
	stop := fightWriter(t, ctx, ks.Namespace, "web", 200*time.Millisecond)
	stopped := false
	defer func() {
		if !stopped {
			stop()
		}
	}()

	var contested kustomizev1.ContestedDrift
	g.Eventually(func(g Gomega) {
		got := &kustomizev1.Kustomization{}
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(ks), got)).To(Succeed())
		c := conditions.Get(got, kustomizev1.DriftContestedCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(c.Message).To(And(ContainSubstring("Deployment/"+ks.Namespace+"/web"), ContainSubstring("spec.replicas"),
			ContainSubstring("field manager fighter"), ContainSubstring("spec.ignore {paths: [/spec/replicas], target: {kind: Deployment, name: web}}")))
		g.Expect(got.Status.Drift).NotTo(BeNil())
		g.Expect(got.Status.Drift.Contested).To(HaveLen(1))
		contested = got.Status.Drift.Contested[0]
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	g.Expect(contested.Object).To(Equal("Deployment/" + ks.Namespace + "/web"))
	g.Expect(contested.Fields).To(Equal([]string{"spec.replicas"}))
	g.Expect(contested.Manager).To(Equal("fighter"))
	g.Expect(contested.Reverts).To(BeNumerically(">=", 1))

	// A single foreign edit of another object during the fight is still
	// reverted, and reported as ordinary drift.
	time.Sleep(20 * time.Second)
	cm := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ks.Namespace, Name: "other"}, cm)).To(Succeed())
	patch := client.MergeFrom(cm.DeepCopy())
	cm.Data["key"] = "edited"
	g.Expect(env.Client.Patch(ctx, cm, patch, client.FieldOwner("kubectl-edit"))).To(Succeed())
	g.Eventually(func() string {
		_ = env.Client.Get(ctx, client.ObjectKey{Namespace: ks.Namespace, Name: "other"}, cm)
		return cm.Data["key"]
	}, 30*time.Second, 50*time.Millisecond).Should(Equal("other"))
	g.Eventually(func() []*events.Event { return correctedObjects(subscription, "ConfigMap/"+ks.Namespace+"/other") },
		30*time.Second, 100*time.Millisecond).ShouldNot(BeEmpty())

	time.Sleep(40 * time.Second) // the rest of the minute
	writes := stop()
	stopped = true
	t.Logf("the fighter wrote %d times", writes)
	g.Expect(writes).To(BeNumerically(">", 200), "the fight ran at about 5 writes per second")

	// The writer stopped: the fight ends, Git's value stays.
	g.Eventually(func(g Gomega) {
		got := &kustomizev1.Kustomization{}
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(ks), got)).To(Succeed())
		g.Expect(conditions.Get(got, kustomizev1.DriftContestedCondition)).To(BeNil())
		g.Expect(got.Status.Drift.Contested).To(BeEmpty())
		g.Expect(subscription.withReason(kustomizev1.DriftContestEndedReason)).NotTo(BeEmpty())
	}, 90*time.Second, 200*time.Millisecond).Should(Succeed())
	g.Expect(replicas(ctx, ks.Namespace, "web")).To(Equal(int32(1)))

	reverts := requests.Count("PATCH", applyPath, false)
	t.Logf("sync-controller reverted the Deployment %d times against %d foreign writes; %d dry-runs", reverts, writes, requests.Count("PATCH", applyPath, true))
	g.Expect(reverts).To(BeNumerically("<=", 36), "a few dozen reverts at most, not one per foreign write")
	g.Expect(subscription.withReason(kustomizev1.DriftContestedReason)).To(HaveLen(1))
	g.Expect(subscription.withReason(kustomizev1.DriftContestEndedReason)).To(HaveLen(1))
	ended := subscription.withReason(kustomizev1.DriftContestEndedReason)[0]
	g.Expect(ended.Message).To(And(ContainSubstring("fighter"), ContainSubstring("spec.replicas")))
	g.Expect(len(correctedObjects(subscription, "Deployment/"+ks.Namespace+"/web"))).To(BeNumerically("<=", 2),
		"only the corrections before the fight was recognized are reported as ordinary drift")
	g.Expect(len(subscription.all())).To(BeNumerically("<=", 12), "no flood: %v", reasonsList(subscription))
}

// correctedObjects returns the DriftCorrected events whose changes name the
// object.
func correctedObjects(s *eventSubscription, object string) []*events.Event {
	var out []*events.Event
	for _, e := range s.withReason(kustomizev1.DriftCorrectedReason) {
		for _, c := range e.Changes {
			if c.Object == object {
				out = append(out, e)
				break
			}
		}
	}
	return out
}

func TestAFightWithAnAutoscalerNamesItAndSuggestsTheFix(t *testing.T) {
	g := NewWithT(t)
	ctx, ks := newKustomization(t, func(ks *kustomizev1.Kustomization) {
		ks.Spec.Interval = metav1.Duration{Duration: 20 * time.Second}
	})
	render(t, ks, "main@sha1:f2", deployment(ks.Namespace, "web", 1))
	waitReady(t, ks, "main@sha1:f2")
	hpa := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: ks.Namespace, Name: "web-hpa"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			MinReplicas:    ptr.To(int32(3)), MaxReplicas: 5,
		},
	}
	g.Expect(env.Client.Create(ctx, hpa)).To(Succeed())

	// What kube-controller-manager's autoscaler does: write the scale
	// subresource, here every 200 ms until the fight is seen.
	done := make(chan struct{})
	defer close(done)
	go func() {
		for n := int32(3); ; n = 7 - n {
			select {
			case <-done:
				return
			case <-time.After(200 * time.Millisecond):
			}
			d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ks.Namespace, Name: "web"}}
			scale := &autoscalingv1.Scale{Spec: autoscalingv1.ScaleSpec{Replicas: n}}
			_ = env.Client.SubResource("scale").Update(ctx, d, client.WithSubResourceBody(scale), client.FieldOwner("kube-controller-manager"))
		}
	}()

	g.Eventually(func(g Gomega) {
		got := &kustomizev1.Kustomization{}
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(ks), got)).To(Succeed())
		c := conditions.Get(got, kustomizev1.DriftContestedCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Message).To(And(
			ContainSubstring("field manager kube-controller-manager"),
			ContainSubstring("HorizontalPodAutoscaler/"+ks.Namespace+"/web-hpa scales this Deployment"),
			ContainSubstring("leave spec.replicas out of Git, or add spec.ignore {paths: [/spec/replicas], target: {kind: Deployment, name: web}}")))
		g.Expect(got.Status.Drift.Contested).To(ConsistOf(And(
			HaveField("Manager", "kube-controller-manager"),
			HaveField("Controller", "HorizontalPodAutoscaler/"+ks.Namespace+"/web-hpa"))))
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
}

func TestAnIgnoreRuleEndsAFight(t *testing.T) {
	g := NewWithT(t)
	ctx, ks := newKustomization(t, func(ks *kustomizev1.Kustomization) {
		ks.Spec.Interval = metav1.Duration{Duration: 20 * time.Second}
	})
	subscription := subscribeEvents(t, ks)
	render(t, ks, "main@sha1:f3", deployment(ks.Namespace, "web", 1))
	waitReady(t, ks, "main@sha1:f3")
	stop := fightWriter(t, ctx, ks.Namespace, "web", 200*time.Millisecond)
	defer stop()
	g.Eventually(func() []string { return reasonsList(subscription) }, 30*time.Second, 100*time.Millisecond).
		Should(ContainElement(kustomizev1.DriftContestedReason))

	current := &kustomizev1.Kustomization{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(ks), current)).To(Succeed())
	patch := client.MergeFrom(current.DeepCopy())
	current.Spec.Ignore = []kustomizev1.IgnoreRule{{Paths: []string{"/spec/replicas"}, Target: &kustomizev1.Selector{Kind: "Deployment", Name: "web"}}}
	g.Expect(env.Client.Patch(ctx, current, patch)).To(Succeed())
	render(t, ks, "main@sha1:f3", deployment(ks.Namespace, "web", 1))

	g.Eventually(func(g Gomega) {
		got := &kustomizev1.Kustomization{}
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(ks), got)).To(Succeed())
		g.Expect(conditions.Get(got, kustomizev1.DriftContestedCondition)).To(BeNil())
		g.Expect(subscription.withReason(kustomizev1.DriftContestEndedReason)).To(HaveLen(1))
	}, 60*time.Second, 200*time.Millisecond).Should(Succeed())
	g.Expect(subscription.withReason(kustomizev1.DriftContestedReason)).To(HaveLen(1))
}

func reasonsList(s *eventSubscription) []string {
	var out []string
	for _, e := range s.all() {
		out = append(out, e.Reason)
	}
	return out
}
