package controller

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
)

// A render that passed a limit is not tried again in a loop: the same
// inputs wait out a backoff (one event), new inputs render at once.
func TestARenderPastALimitIsHeldBackUntilItsInputsChange(t *testing.T) {
	g := NewWithT(t)
	ns := namespace(t)
	key := types.NamespacedName{Namespace: ns, Name: "app"}
	// The holds' clock stands still until the test moves it, so only a
	// change of inputs or the clock can end the hold.
	var now atomic.Int64
	now.Store(time.Now().UnixNano())
	reconciler.held.setClock(func() time.Time { return time.Unix(0, now.Load()) })
	t.Cleanup(func() { reconciler.held.setClock(nil) })

	gitRepo(t, ns, "repo", nil)
	publishTree(t, ns, "repo", "7777777777777777777777777777777777777777", map[string]string{
		"kustomization.yaml": "configMapGenerator:\n- name: big\n  files:\n  - data.txt\n",
		"data.txt":           strings.Repeat("y", int(testRenderLimits.MaxOutputBytes)),
	})
	kustomization(t, ns, "app", "repo", func(s *kustomizev1.KustomizationSpec) {
		s.RetryInterval = &metav1.Duration{Duration: time.Second}
	})
	ks := waitRendered(t, ns, "app", metav1.ConditionFalse, meta.LimitExceededReason)
	g.Expect(renderedCondition(ks).Message).To(ContainSubstring("the same source, spec and values are rendered again in 1s"))
	g.Expect(reconciler.Builds(key)).To(Equal(int64(1)))

	// Several retry intervals of reconciles, and no second build.
	reconciles := reconciler.Reconciles(key)
	g.Eventually(func() int64 { return reconciler.Reconciles(key) }, timeout, poll).Should(BeNumerically(">=", reconciles+3))
	g.Expect(reconciler.Builds(key)).To(Equal(int64(1)), "the same inputs are held back")
	g.Expect(published.of(ns, "app", meta.LimitExceededReason)).To(HaveLen(1), "one event says so")

	// Past the backoff, the same inputs are tried again, without a second
	// event, and the next wait is twice as long.
	now.Add(int64(2 * time.Second))
	g.Eventually(func() int64 { return reconciler.Builds(key) }, timeout, poll).Should(Equal(int64(2)))
	g.Eventually(func(g Gomega) {
		g.Expect(renderedCondition(getKS(g, ns, "app")).Message).To(ContainSubstring("rendered again in 2s (attempt 3"))
	}, timeout, poll).Should(Succeed())
	g.Consistently(func() []any { return asAny(published.of(ns, "app", meta.LimitExceededReason)) }, 2*time.Second, poll).Should(HaveLen(1))

	// A changed spec renders at once, clock or no clock.
	ks = getKS(g, ns, "app")
	patch := client.MergeFrom(ks.DeepCopy())
	ks.Spec.CommonMetadata = &kustomizev1.CommonMetadata{Labels: map[string]string{"team": "a"}}
	g.Expect(k8s.Patch(context.Background(), ks, patch)).To(Succeed())
	g.Eventually(func() int64 { return reconciler.Builds(key) }, timeout, poll).Should(Equal(int64(3)))
	g.Eventually(func() int { return len(published.of(ns, "app", meta.LimitExceededReason)) }, timeout, poll).Should(Equal(2))
}

func asAny[T any](s []T) []any {
	out := make([]any, len(s))
	for i := range s {
		out[i] = s[i]
	}
	return out
}
