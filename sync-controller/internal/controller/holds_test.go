package controller

import (
	"context"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
)

// These tests are the rules of docs/design/sync-engine.md, "How the holds
// combine": a rollback or a manual sync is a person's request, which a
// sync window holds unless it lets manual syncs through; each message
// names every hold that applies and the one that acts.

// readyOf returns the Kustomization and its Ready condition.
func readyOf(g Gomega, ks *kustomizev1.Kustomization) (*kustomizev1.Kustomization, *metav1.Condition) {
	got := &kustomizev1.Kustomization{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(ks), got)).To(Succeed())
	ready := conditions.Get(got, meta.ReadyCondition)
	g.Expect(ready).NotTo(BeNil())
	return got, ready
}

// A rollback asked during a deny window waits for it, the applied revision
// kept and corrected; once the window lets manual syncs through it is
// applied and held, the window named beside it; a resume during the
// window leaves the rolled-back render applied (the window now holds the
// newest one) until the window ends.
func TestARollbackInADenyWindowIsAppliedOnlyWhenTheWindowLetsManualSyncsThrough(t *testing.T) {
	g := NewWithT(t)
	windowClock.Set(t, "2026-12-07T08:00:00Z")
	ctx, ks := newKustomization(t, func(ks *kustomizev1.Kustomization) {
		ks.Spec.SyncWindows = []kustomizev1.SyncWindow{nightly()}
	})
	ns := ks.Namespace
	first := renderKept(t, ks, "main@sha1:w001", settings(ns, "one"))
	waitReady(t, ks, "main@sha1:w001")
	renderKept(t, ks, "main@sha1:w002", settings(ns, "two"))
	waitReady(t, ks, "main@sha1:w002")

	windowClock.Set(t, "2026-12-07T09:30:00Z")
	events := subscribeEvents(t, ks)
	patchKustomization(t, ks, func(k *kustomizev1.Kustomization) {
		k.Annotations = map[string]string{kustomizev1.RollbackAnnotation: first}
	})
	msg := waitNotReady(t, ks, kustomizev1.OutsideSyncWindowReason)
	g.Expect(msg).To(Equal("the rollback to revision main@sha1:w001 (render " + shortDigest(first) + ") and revision main@sha1:w002 are held by sync window spec.syncWindows[0], " +
		"which lets no manual sync through, until 2026-12-07T11:00:00Z; drift from revision main@sha1:w002 is still corrected"))
	g.Expect(settingsValue(ctx, g, ns)).To(Equal("two"))
	g.Expect(rolledBack(g, ks)).To(BeNil(), "nothing is rolled back yet")
	setValue(t, ctx, ns, "settings", "edited")
	waitSettings(ctx, g, ns, "two")

	// The window lets manual syncs through: the rollback goes in and holds.
	patchKustomization(t, ks, func(k *kustomizev1.Kustomization) {
		k.Spec.SyncWindows = []kustomizev1.SyncWindow{nightly(func(w *kustomizev1.SyncWindow) { w.ManualSync = true })}
	})
	renderKept(t, ks, "main@sha1:w002", settings(ns, "two")) // render-controller's render of the new generation
	got := waitReady(t, ks, "main@sha1:w001")
	waitSettings(ctx, g, ns, "one")
	g.Expect(conditions.Get(got, meta.ReadyCondition).Message).To(Equal("Applied revision: main@sha1:w001; " +
		"rolled back to revision main@sha1:w001 (render " + shortDigest(first) + "); revision main@sha1:w002 is rendered but not applied until plumb resume kustomization app; " +
		"sync window spec.syncWindows[0] is closed until 2026-12-07T11:00:00Z, drift is corrected"))
	g.Expect(rolledBack(g, ks)).To(HaveField("Status", metav1.ConditionTrue))

	// Resume during the window: the newest render is new to the cluster,
	// so the window holds it and the rolled-back render stays.
	patchKustomization(t, ks, func(k *kustomizev1.Kustomization) { delete(k.Annotations, kustomizev1.RollbackAnnotation) })
	msg = waitNotReady(t, ks, kustomizev1.OutsideSyncWindowReason)
	g.Expect(msg).To(Equal("revision main@sha1:w002 is held by sync window spec.syncWindows[0] until 2026-12-07T11:00:00Z; drift from revision main@sha1:w001 is still corrected"))
	g.Expect(settingsValue(ctx, g, ns)).To(Equal("one"))
	g.Eventually(func(g Gomega) {
		ended := events.withReason(kustomizev1.RollbackEndedReason)
		g.Expect(ended).To(HaveLen(1))
		g.Expect(ended[0].Message).To(Equal("rollback ended: the rollback annotation was removed; " + msg))
	}, 30*time.Second, 50*time.Millisecond).Should(Succeed())

	windowClock.Set(t, "2026-12-07T11:00:01Z")
	requestReconcile(t, ks)
	got = waitReady(t, ks, "main@sha1:w002")
	g.Expect(settingsValue(ctx, g, ns)).To(Equal("two"))
	g.Expect(got.Status.SyncWindow).To(BeNil())
}

// A Manual Kustomization in a deny window reports a new revision out of
// sync, the window named in Ready; a sync asked then waits, not handled,
// with a message naming both; once the window lets manual syncs through
// the same request applies it.
func TestAManualSyncInADenyWindowWaitsUntilTheWindowLetsItThrough(t *testing.T) {
	g := NewWithT(t)
	windowClock.Set(t, "2026-12-07T08:00:00Z")
	ctx, ks := newKustomization(t, func(ks *kustomizev1.Kustomization) {
		ks.Spec.SyncPolicy = kustomizev1.SyncPolicyManual
		ks.Spec.SyncWindows = []kustomizev1.SyncWindow{nightly()}
	})
	ns := ks.Namespace
	renderKept(t, ks, "main@sha1:m001", settings(ns, "one"))
	waitOutOfSync(t, ks, kustomizev1.ManualSyncPendingReason, "main@sha1:m001")
	requestSync(t, ks, "")
	waitReady(t, ks, "main@sha1:m001")

	windowClock.Set(t, "2026-12-07T09:30:00Z")
	renderKept(t, ks, "main@sha1:m002", settings(ns, "two"))
	waitOutOfSync(t, ks, kustomizev1.ManualSyncPendingReason, "main@sha1:m002")
	g.Eventually(func(g Gomega) string {
		_, ready := readyOf(g, ks)
		return ready.Message
	}, 30*time.Second, 50*time.Millisecond).Should(Equal("Applied revision: main@sha1:m001; revision main@sha1:m002 waits for a manual sync (0 to create, 1 to change, 0 to prune); "+
		"sync window spec.syncWindows[0] is closed until 2026-12-07T11:00:00Z, drift is reported, not corrected"), "a Manual Kustomization's drift is reported, whatever the window allows")

	token := "2026-12-07T09:31:00Z"
	patchKustomization(t, ks, func(k *kustomizev1.Kustomization) {
		k.Annotations = map[string]string{kustomizev1.SyncRequestAnnotation: token}
	})
	msg := waitNotReady(t, ks, kustomizev1.OutsideSyncWindowReason)
	g.Expect(msg).To(Equal("the manual sync asked at " + token + " of revision main@sha1:m002 is held by sync window spec.syncWindows[0], " +
		"which lets no manual sync through, until 2026-12-07T11:00:00Z; drift from revision main@sha1:m001 is reported, not corrected"))
	got, _ := readyOf(g, ks)
	g.Expect(got.Status.LastHandledSyncAt).NotTo(Equal(token), "the request waits, not handled")
	g.Expect(settingsValue(ctx, g, ns)).To(Equal("one"))

	patchKustomization(t, ks, func(k *kustomizev1.Kustomization) {
		k.Spec.SyncWindows = []kustomizev1.SyncWindow{nightly(func(w *kustomizev1.SyncWindow) { w.ManualSync = true })}
	})
	renderKept(t, ks, "main@sha1:m002", settings(ns, "two")) // render-controller's render of the new generation
	got = waitReady(t, ks, "main@sha1:m002")
	g.Expect(got.Status.LastHandledSyncAt).To(Equal(token))
	g.Expect(settingsValue(ctx, g, ns)).To(Equal("two"))
	g.Expect(conditions.Get(got, kustomizev1.OutOfSyncCondition)).To(BeNil())
}

// A rollback of a Manual Kustomization is its own request: applied without
// plumb sync. With follow-git the next commit ends it, and that commit,
// like any of a Manual object, waits for a sync.
func TestARollbackOfAManualKustomizationAppliesAndTheNextCommitWaitsForASync(t *testing.T) {
	g := NewWithT(t)
	ctx, ks := newKustomization(t, func(ks *kustomizev1.Kustomization) {
		ks.Spec.SyncPolicy = kustomizev1.SyncPolicyManual
	})
	ns := ks.Namespace
	first := renderKept(t, ks, "main@sha1:n001", settings(ns, "one"))
	requestSync(t, ks, "")
	waitReady(t, ks, "main@sha1:n001")
	second := renderKept(t, ks, "main@sha1:n002", settings(ns, "two"))
	waitOutOfSync(t, ks, kustomizev1.ManualSyncPendingReason, "main@sha1:n002")
	requestSync(t, ks, "")
	waitReady(t, ks, "main@sha1:n002")

	patchKustomization(t, ks, func(k *kustomizev1.Kustomization) {
		k.Annotations[kustomizev1.RollbackAnnotation] = first
		k.Annotations[kustomizev1.RollbackFollowGitAnnotation] = second
	})
	got := waitReady(t, ks, "main@sha1:n001")
	waitSettings(ctx, g, ns, "one")
	g.Expect(conditions.Get(got, kustomizev1.RolledBackCondition)).To(HaveField("Status", metav1.ConditionTrue))

	// Drift from the rolled-back render is reported, as Manual reports it.
	setValue(t, ctx, ns, "settings", "edited")
	out := waitOutOfSyncReason(t, ks, kustomizev1.DriftDetectedReason)
	g.Expect(out.Revision).To(Equal("main@sha1:n001"))
	g.Expect(settingsValue(ctx, g, ns)).To(Equal("edited"))

	renderKept(t, ks, "main@sha1:n003", settings(ns, "three"))
	out = waitOutOfSync(t, ks, kustomizev1.ManualSyncPendingReason, "main@sha1:n003")
	g.Expect(out.Change).To(Equal([]string{"ConfigMap/" + ns + "/settings"}))
	g.Expect(settingsValue(ctx, g, ns)).To(Equal("edited"))
	g.Eventually(func(g Gomega) {
		got, _ := readyOf(g, ks)
		g.Expect(got.Annotations).NotTo(HaveKey(kustomizev1.RollbackAnnotation))
		g.Expect(conditions.Get(got, kustomizev1.RolledBackCondition)).To(BeNil())
	}, 30*time.Second, 50*time.Millisecond).Should(Succeed())

	requestSync(t, ks, "")
	waitReady(t, ks, "main@sha1:n003")
	g.Expect(settingsValue(ctx, g, ns)).To(Equal("three"))
}

// A rollback of a Manual HelmRelease is a request of its own: it is
// released once without a sync, and drift from it is then reported as
// Manual reports it — not corrected, nothing released again.
func TestARollbackOfAManualHelmReleaseAppliesOnceAndItsDriftIsReported(t *testing.T) {
	g := NewWithT(t)
	ctx, hr := newHelmRelease(t, func(hr *helmv2.HelmRelease) {
		hr.Spec.SyncPolicy = kustomizev1.SyncPolicyManual
	})
	ns := hr.Namespace
	renderRelease(t, hr, "1.0.0", "v: one", settings(ns, "one"))
	requestSync(t, hr, "")
	v1 := waitReleaseReady(t, hr, "1.0.0").Status.RenderedArtifact.Digest
	renderRelease(t, hr, "2.0.0", "v: two", settings(ns, "two"))
	waitOutOfSync(t, hr, kustomizev1.ManualSyncPendingReason, "2.0.0")
	requestSync(t, hr, "")
	got := waitReleaseReady(t, hr, "2.0.0")

	patch := client.MergeFrom(got.DeepCopy())
	got.Annotations[kustomizev1.RollbackAnnotation] = v1
	g.Expect(env.Client.Patch(ctx, got, patch)).To(Succeed())
	waitSettings(ctx, g, ns, "one")
	got = waitReleaseReady(t, hr, "1.0.0")
	g.Expect(releases(got)).To(Equal([]string{"3:1.0.0:deployed", "2:2.0.0:superseded", "1:1.0.0:superseded"}))

	setValue(t, ctx, ns, "settings", "edited")
	out := waitOutOfSync(t, hr, kustomizev1.DriftDetectedReason, "1.0.0")
	g.Expect(out.Change).To(Equal([]string{"ConfigMap/" + ns + "/settings"}))
	got = getRelease(g, hr)
	g.Expect(conditions.IsTrue(got, kustomizev1.DriftedCondition)).To(BeTrue())
	g.Expect(got.Status.Drift.Paths).To(ContainElement("ConfigMap/" + ns + "/settings:data.value"))
	g.Expect(settingsValue(ctx, g, ns)).To(Equal("edited"), "reported, not corrected")
	g.Expect(releases(got)).To(HaveLen(3))
}

// waitOutOfSyncReason waits for OutOfSync=True with reason and returns
// status.outOfSync.
func waitOutOfSyncReason(t *testing.T, ks *kustomizev1.Kustomization, reason string) *kustomizev1.OutOfSyncStatus {
	t.Helper()
	var out *kustomizev1.OutOfSyncStatus
	NewWithT(t).Eventually(func(g Gomega) {
		got, _ := readyOf(g, ks)
		c := conditions.Get(got, kustomizev1.OutOfSyncCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(reason), c.Message)
		out = got.Status.OutOfSync
		g.Expect(out).NotTo(BeNil())
	}, 30*time.Second, 50*time.Millisecond).Should(Succeed())
	return out
}

// A HelmRelease's rollback asked during a deny window waits, the deployed
// release kept and corrected, until the window lets manual syncs through;
// it is then a rollback release.
func TestAHelmReleaseRollbackInADenyWindowWaitsForManualSyncs(t *testing.T) {
	g := NewWithT(t)
	windowClock.Set(t, "2026-12-07T08:00:00Z")
	ctx, hr := newHelmRelease(t, func(hr *helmv2.HelmRelease) {
		hr.Spec.SyncWindows = []kustomizev1.SyncWindow{nightly()}
	})
	ns := hr.Namespace
	renderRelease(t, hr, "1.0.0", "v: one", settings(ns, "one"))
	v1 := waitReleaseReady(t, hr, "1.0.0").Status.RenderedArtifact.Digest
	renderRelease(t, hr, "2.0.0", "v: two", settings(ns, "two"))
	got := waitReleaseReady(t, hr, "2.0.0")

	windowClock.Set(t, "2026-12-07T09:30:00Z")
	patch := client.MergeFrom(got.DeepCopy())
	got.Annotations = map[string]string{kustomizev1.RollbackAnnotation: v1}
	g.Expect(env.Client.Patch(ctx, got, patch)).To(Succeed())
	g.Eventually(func(g Gomega) string {
		ready := conditions.Get(getRelease(g, hr), meta.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		return ready.Message
	}, time.Minute, 100*time.Millisecond).Should(Equal("the rollback to revision 1.0.0 (render " + shortDigest(v1) + ") and revision 2.0.0 are held by sync window spec.syncWindows[0], " +
		"which lets no manual sync through, until 2026-12-07T11:00:00Z; drift from revision 2.0.0 is still corrected"))
	g.Expect(releases(getRelease(g, hr))).To(Equal([]string{"2:2.0.0:deployed", "1:1.0.0:superseded"}))
	g.Expect(settingsValue(ctx, g, ns)).To(Equal("two"))
	// The deployed release is still corrected, and nothing is released.
	setValue(t, ctx, ns, "settings", "edited")
	waitSettings(ctx, g, ns, "two")
	g.Expect(releases(getRelease(g, hr))).To(Equal([]string{"2:2.0.0:deployed", "1:1.0.0:superseded"}))

	got = getRelease(g, hr)
	patch = client.MergeFrom(got.DeepCopy())
	got.Spec.SyncWindows = []kustomizev1.SyncWindow{nightly(func(w *kustomizev1.SyncWindow) { w.ManualSync = true })}
	g.Expect(env.Client.Patch(ctx, got, patch)).To(Succeed())
	renderRelease(t, hr, "2.0.0", "v: two", settings(ns, "two")) // render-controller's render of the new generation
	waitSettings(ctx, g, ns, "one")
	got = waitReleaseReady(t, hr, "1.0.0")
	g.Expect(releases(got)).To(Equal([]string{"3:1.0.0:deployed", "2:2.0.0:superseded", "1:1.0.0:superseded"}))
	g.Expect(conditions.Get(got, meta.ReadyCondition).Message).To(HaveSuffix("; sync window spec.syncWindows[0] is closed until 2026-12-07T11:00:00Z, drift is corrected"))
}
