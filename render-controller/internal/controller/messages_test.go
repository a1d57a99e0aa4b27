package controller

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/events"
	"plumb.dev/pkg/message"
)

// markerRE matches message.Truncate's marker at the end of a message.
const markerRE = `… \([0-9,]+ more bytes\)$`

// A 40 KB spec.patches entry kustomize cannot parse: its error quotes the
// patch, past the API server's cap on a condition message. Rendered reports
// the failure anyway, read back from the API server with its message cut
// to message.MaxBytes, and the BuildFailed event — on the stream and as a
// Kubernetes Event — is cut the same way.
func TestAHugeRenderErrorIsReportedBounded(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t)
	gitRepo(t, ns, "repo", nil)
	publishTree(t, ns, "repo", strings.Repeat("4", 40), map[string]string{"cm.yaml": cm("settings", "a: b")})
	patch := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  big: " +
		strings.Repeat("x", 40_000) + "\n    : [not yaml\n"
	kustomization(t, ns, "app", "repo", func(s *kustomizev1.KustomizationSpec) {
		s.Patches = []kustomizev1.Patch{{Patch: patch}}
	})

	ks := waitRendered(t, ns, "app", metav1.ConditionFalse, kustomizev1.BuildFailedReason)
	msg := renderedCondition(ks).Message
	g.Expect(len(msg)).To(BeNumerically("<=", message.MaxBytes))
	g.Expect(msg).To(ContainSubstring("xxxx"), "the message quotes the patch")
	g.Expect(msg).To(MatchRegexp(markerRE))

	g.Eventually(func(g Gomega) {
		evs := published.of(ns, "app", kustomizev1.BuildFailedReason)
		g.Expect(evs).NotTo(BeEmpty())
		g.Expect(len(evs[0].Message)).To(BeNumerically("<=", message.MaxBytes))
		g.Expect(evs[0].Message).To(MatchRegexp(markerRE))
	}, timeout, poll).Should(Succeed())

	// Each retry of the same failure records the same news again — one
	// fingerprint, which notification-controller alerts once per
	// --rate-limit-interval — though the condition read back holds the cut
	// message and the error the whole one. The second requested build
	// starts only once the first retry is over.
	key := client.ObjectKeyFromObject(ks)
	builds := reconciler.Builds(key)
	for i := range int64(2) {
		requestReconcile(t, ns, "app")
		g.Eventually(func() int64 { return reconciler.Builds(key) }, timeout, poll).Should(BeNumerically(">", builds+i))
	}
	g.Eventually(func() int { return len(published.of(ns, "app", kustomizev1.BuildFailedReason)) }, timeout, poll).
		Should(BeNumerically(">=", 3))
	failures := published.of(ns, "app", kustomizev1.BuildFailedReason)
	for i := range failures {
		g.Expect(events.Fingerprint(&failures[i])).To(Equal(events.Fingerprint(&failures[0])))
	}

	g.Eventually(func(g Gomega) {
		var list corev1.EventList
		g.Expect(k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
		var found []corev1.Event
		for _, e := range list.Items {
			if e.InvolvedObject.Name == "app" && e.Reason == kustomizev1.BuildFailedReason {
				found = append(found, e)
			}
		}
		g.Expect(found).NotTo(BeEmpty())
		g.Expect(len(found[0].Message)).To(BeNumerically("<=", message.MaxBytes))
		g.Expect(found[0].Message).To(MatchRegexp(markerRE))
	}, timeout, poll).Should(Succeed())
}
