package controller

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
)

// syncs summarizes a Kustomization's history as
// revision:totalReconciliations:lastReconciledStatus, newest first.
func syncs(ks *kustomizev1.Kustomization) []string {
	var out []string
	for _, h := range ks.Status.History {
		out = append(out, fmt.Sprintf("%s:%d:%s", h.Metadata[meta.HistoryRevisionKey], h.TotalReconciliations, h.LastReconciledStatus))
	}
	return out
}

// waitHistory waits until the Kustomization's history is want (syncs).
func waitHistory(t *testing.T, ks *kustomizev1.Kustomization, want ...string) *kustomizev1.Kustomization {
	t.Helper()
	got := &kustomizev1.Kustomization{}
	NewWithT(t).Eventually(func(g Gomega) []string {
		g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(ks), got)).To(Succeed())
		return syncs(got)
	}, time.Minute, 100*time.Millisecond).Should(Equal(want))
	return got
}

func TestKustomizationHistory(t *testing.T) {
	g := NewWithT(t)
	// wait with a short timeout: a Deployment never gets healthy on a
	// control plane without controllers, so its sync fails after applying.
	_, ks := newKustomization(t, func(ks *kustomizev1.Kustomization) {
		ks.Spec.Wait = true
		ks.Spec.Timeout.Duration = 2 * time.Second
	})
	ns := ks.Namespace
	first := configMaps(ns, "a")

	render(t, ks, "main@sha1:1111", first)
	got := waitReady(t, ks, "main@sha1:1111")
	g.Expect(syncs(got)).To(Equal([]string{"main@sha1:1111:1:Succeeded"}))
	one := got.Status.History[0]
	g.Expect(one.Digest).To(Equal(got.Status.RenderedArtifact.Digest), "the digest names the rendered artifact")
	g.Expect(one.FirstReconciled).To(Equal(one.LastReconciled))
	// Timed from the run's start, not from status' whole seconds: a sync
	// of one ConfigMap, shorter than a second, does not read 0s.
	g.Expect(one.LastReconciledDuration.Duration).To(BeNumerically(">", 0), "the duration of a sync shorter than a second")

	// A new render: a new entry, first.
	render(t, ks, "main@sha1:2222", configMaps(ns, "a", "b"))
	waitReady(t, ks, "main@sha1:2222")
	got = waitHistory(t, ks, "main@sha1:2222:1:Succeeded", "main@sha1:1111:1:Succeeded")
	g.Expect(got.Status.History[0].Digest).NotTo(Equal(one.Digest))

	// A revert renders the first digest again: its entry is updated and
	// moves first, with the new revision; no entry is added.
	render(t, ks, "main@sha1:3333", first)
	waitReady(t, ks, "main@sha1:3333")
	got = waitHistory(t, ks, "main@sha1:3333:2:Succeeded", "main@sha1:2222:1:Succeeded")
	again := got.Status.History[0]
	g.Expect(again.Digest).To(Equal(one.Digest))
	g.Expect(again.FirstReconciled).To(Equal(one.FirstReconciled))
	g.Expect(again.LastReconciled.Before(&one.LastReconciled)).To(BeFalse())

	// A sync that applied and failed is recorded with its reason.
	render(t, ks, "main@sha1:4444", first+"---\n"+deployment(ns, "web", 1))
	waitNotReady(t, ks, kustomizev1.HealthCheckFailedReason)
	waitHistory(t, ks, "main@sha1:4444:1:HealthCheckFailed", "main@sha1:3333:2:Succeeded", "main@sha1:2222:1:Succeeded")

	// Bounded: the oldest entries go.
	for i, rev := range []string{"main@sha1:5555", "main@sha1:6666", "main@sha1:7777"} {
		render(t, ks, rev, configMaps(ns, "a", fmt.Sprintf("c%d", i)))
		waitReady(t, ks, rev)
	}
	got = waitHistory(t, ks, "main@sha1:7777:1:Succeeded", "main@sha1:6666:1:Succeeded", "main@sha1:5555:1:Succeeded",
		"main@sha1:4444:1:HealthCheckFailed", "main@sha1:3333:2:Succeeded")
	g.Expect(got.Status.History).To(HaveLen(kustomizev1.MaxHistory))
}
