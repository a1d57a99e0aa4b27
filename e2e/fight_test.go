package e2e

import (
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
)

// A real HorizontalPodAutoscaler (kube-controller-manager's) scales the
// sample Deployment, whose replicas Git sets to 2, up to its minReplicas of
// 3 every sync period. Plumb reverts the first time, recognizes the fight at
// the autoscaler's next write, and ends in a DriftContested condition that
// names the autoscaler and the fix — with one DriftContested alert, not an
// alert per revert.
func TestAutoscalerFightEndsInDriftContested(t *testing.T) {
	s := deploy(t, "e2e-fight")
	ns := s.demo.AppNamespace
	hpa := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hello"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "hello"},
			MinReplicas:    ptr.To(int32(3)),
			MaxReplicas:    5,
		},
	}
	s.g.Expect(env.Client.Create(s.ctx, hpa)).To(Succeed())

	var contested kustomizev1.ContestedDrift
	s.g.Eventually(func(g Gomega) {
		k := s.kustomization()
		c := conditions.Get(k, kustomizev1.DriftContestedCondition)
		g.Expect(c).NotTo(BeNil(), "no DriftContested condition yet")
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(c.Message).To(And(
			ContainSubstring("Deployment/"+ns+"/hello: spec.replicas"),
			ContainSubstring("HorizontalPodAutoscaler/"+ns+"/hello scales this Deployment"),
			ContainSubstring("leave spec.replicas out of Git, or add spec.ignore {paths: [/spec/replicas], target: {kind: Deployment, name: hello}}")))
		g.Expect(k.Status.Drift).NotTo(BeNil())
		g.Expect(k.Status.Drift.Contested).To(HaveLen(1))
		contested = k.Status.Drift.Contested[0]
	}).WithTimeout(2 * time.Minute).WithPolling(poll).Should(Succeed())
	t.Logf("contested: %+v", contested)
	s.g.Expect(contested.Controller).To(Equal("HorizontalPodAutoscaler/" + ns + "/hello"))
	s.g.Expect(contested.Fields).To(Equal([]string{"spec.replicas"}))
	s.g.Expect(contested.Manager).NotTo(BeEmpty())

	msg := s.waitSlack(kustomizev1.DriftContestedReason, "HorizontalPodAutoscaler/"+ns+"/hello")
	t.Logf("alert: %s", msg)

	// Two more autoscaler periods (15 s each): the fight goes on without a
	// second DriftContested alert and without an alert per revert.
	time.Sleep(35 * time.Second)
	k := s.kustomization()
	s.g.Expect(conditions.IsTrue(k, kustomizev1.DriftContestedCondition)).To(BeTrue())
	s.g.Expect(s.slackCount(kustomizev1.DriftContestedReason)).To(Equal(1))
	s.g.Expect(s.slackCount(kustomizev1.DriftCorrectedReason)).To(BeNumerically("<=", 2),
		"only the corrections before the fight was recognized are alerted as ordinary drift")

	// Leaving replicas to the autoscaler ends the fight: one more alert.
	current := s.kustomization()
	patch := client.MergeFrom(current.DeepCopy())
	current.Spec.Ignore = []kustomizev1.IgnoreRule{{Paths: []string{"/spec/replicas"}, Target: &kustomizev1.Selector{Kind: "Deployment", Name: "hello"}}}
	s.g.Expect(env.Client.Patch(s.ctx, current, patch)).To(Succeed())
	s.waitSlack(kustomizev1.DriftContestEndedReason, "Deployment/"+ns+"/hello")
	s.g.Eventually(func() bool {
		return conditions.Has(s.kustomization(), kustomizev1.DriftContestedCondition)
	}).WithTimeout(timeout).WithPolling(poll).Should(BeFalse())
	s.g.Expect(s.slackCount(kustomizev1.DriftContestedReason)).To(Equal(1))
}

// slackCount counts the Slack messages about this story's Kustomization
// with the reason.
func (s *story) slackCount(reason string) int {
	author := "kustomization/" + s.key.Namespace + "/" + s.key.Name
	msgs, _ := env.Slack.Messages()
	n := 0
	for _, m := range msgs {
		for _, a := range m.Attachments {
			if a.AuthorName == author && a.Title == reason {
				n++
			}
		}
	}
	return n
}
