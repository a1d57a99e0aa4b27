package controller

import (
	"context"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
)

// requestSync sets plumb.dev/sync (and plumb.dev/sync-only when only is
// not empty) on obj and waits until sync-controller recorded the token in
// status.lastHandledSyncAt, returning the object as it then stands.
func requestSync[T interface {
	client.Object
	*kustomizev1.Kustomization | *helmv2.HelmRelease
}](t *testing.T, obj T, only string) T {
	t.Helper()
	g := NewWithT(t)
	token := time.Now().Format(time.RFC3339Nano)
	current := obj.DeepCopyObject().(T)
	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), current)).To(Succeed())
	patch := client.MergeFrom(current.DeepCopyObject().(T))
	ann := current.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[kustomizev1.SyncRequestAnnotation] = token
	delete(ann, kustomizev1.SyncOnlyAnnotation)
	if only != "" {
		ann[kustomizev1.SyncOnlyAnnotation] = only
	}
	current.SetAnnotations(ann)
	g.Expect(env.Client.Patch(context.Background(), current, patch)).To(Succeed())
	got := obj.DeepCopyObject().(T)
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), got)).To(Succeed())
		g.Expect(manualSyncOf(got).LastHandledSyncAt).To(Equal(token))
	}, time.Minute, 50*time.Millisecond).Should(Succeed())
	return got
}

func manualSyncOf(obj client.Object) kustomizev1.ManualSyncStatus {
	switch o := obj.(type) {
	case *kustomizev1.Kustomization:
		return o.Status.ManualSyncStatus
	case *helmv2.HelmRelease:
		return o.Status.ManualSyncStatus
	}
	panic("no manual sync status")
}

// waitOutOfSync waits until obj reports OutOfSync=True with reason for
// revision, Ready=True at its generation saying that it waits, and returns
// status.outOfSync.
func waitOutOfSync(t *testing.T, obj client.Object, reason, revision string) *kustomizev1.OutOfSyncStatus {
	t.Helper()
	var out *kustomizev1.OutOfSyncStatus
	NewWithT(t).Eventually(func(g Gomega) {
		got := obj.DeepCopyObject().(client.Object)
		g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), got)).To(Succeed())
		getter := got.(conditions.Getter)
		oos := conditions.Get(getter, kustomizev1.OutOfSyncCondition)
		g.Expect(oos).NotTo(BeNil())
		g.Expect(oos.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(oos.Reason).To(Equal(reason), oos.Message)
		out = manualSyncOf(got).OutOfSync
		g.Expect(out).NotTo(BeNil())
		g.Expect(out.Revision).To(Equal(revision))
		ready := conditions.Get(getter, meta.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.ObservedGeneration).To(Equal(got.GetGeneration()))
		g.Expect(ready.Message).To(ContainSubstring("revision " + revision + " waits for a manual sync"))
	}, time.Minute, 100*time.Millisecond).Should(Succeed())
	return out
}

// expectAbsent fails unless the ConfigMap does not exist: any other error
// of the read fails too.
func expectAbsent(g Gomega, ctx context.Context, ns, name string) {
	err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &corev1.ConfigMap{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "ConfigMap %s: %v", name, err)
}

func configMapData(g Gomega, ctx context.Context, ns, name string) string {
	cm := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cm)).To(Succeed())
	return cm.Data["key"]
}

func TestManualKustomizationAppliesOnlyWhenASyncIsAsked(t *testing.T) {
	g := NewWithT(t)
	ctx, ks := newKustomization(t, func(ks *kustomizev1.Kustomization) {
		ks.Spec.SyncPolicy = kustomizev1.SyncPolicyManual
		ks.Spec.MaxPrunePercent = ptr.To[int32](100)
	})
	ns := ks.Namespace
	render(t, ks, "main@sha1:1111", configMaps(ns, "a", "b"))

	out := waitOutOfSync(t, ks, kustomizev1.ManualSyncPendingReason, "main@sha1:1111")
	g.Expect(out.Create).To(ConsistOf("ConfigMap/"+ns+"/a", "ConfigMap/"+ns+"/b"))
	g.Expect(out.Creates).To(Equal(2))
	g.Expect(out.Change).To(BeEmpty())
	expectAbsent(g, ctx, ns, "a")
	expectAbsent(g, ctx, ns, "b")

	got := requestSync(t, ks, "")
	got = waitReady(t, got, "main@sha1:1111")
	g.Expect(conditions.Get(got, kustomizev1.OutOfSyncCondition)).To(BeNil())
	g.Expect(got.Status.OutOfSync).To(BeNil())
	g.Expect(configMapData(g, ctx, ns, "a")).To(Equal("a"))

	// A new revision changes a, adds c and drops b: compared, not applied.
	next := configMaps(ns, "a2", "c")
	next = replaceName(next, "a2", "a")
	render(t, ks, "main@sha1:2222", next)
	out = waitOutOfSync(t, ks, kustomizev1.ManualSyncPendingReason, "main@sha1:2222")
	g.Expect(out.Create).To(Equal([]string{"ConfigMap/" + ns + "/c"}))
	g.Expect(out.Change).To(Equal([]string{"ConfigMap/" + ns + "/a"}))
	g.Expect(out.Prune).To(Equal([]string{"ConfigMap/" + ns + "/b"}))
	got = &kustomizev1.Kustomization{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(ks), got)).To(Succeed())
	g.Expect(got.Status.LastAppliedRevision).To(Equal("main@sha1:1111"))
	g.Expect(configMapData(g, ctx, ns, "a")).To(Equal("a"))
	g.Expect(configMapData(g, ctx, ns, "b")).To(Equal("b"))
	expectAbsent(g, ctx, ns, "c")

	// A selective sync of c applies c alone and prunes nothing.
	requestSync(t, ks, "ConfigMap/"+ns+"/c")
	out = waitOutOfSync(t, ks, kustomizev1.ManualSyncPendingReason, "main@sha1:2222")
	g.Expect(out.Create).To(BeEmpty())
	g.Expect(out.Change).To(Equal([]string{"ConfigMap/" + ns + "/a"}))
	g.Expect(out.Prune).To(Equal([]string{"ConfigMap/" + ns + "/b"}))
	g.Expect(configMapData(g, ctx, ns, "c")).To(Equal("c"))
	g.Expect(configMapData(g, ctx, ns, "a")).To(Equal("a"))
	g.Expect(configMapData(g, ctx, ns, "b")).To(Equal("b"))
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(ks), got)).To(Succeed())
	g.Expect(got.Status.LastAppliedRevision).To(Equal("main@sha1:1111"))
	g.Expect(got.Status.Inventory.Entries).To(ContainElement(HaveField("Name", "c")))

	// A selective sync naming what the render lacks applies nothing.
	requestSync(t, ks, "ConfigMap/"+ns+"/nope")
	msg := waitNotReady(t, ks, kustomizev1.SyncFailedReason)
	g.Expect(msg).To(ContainSubstring("ConfigMap/" + ns + "/nope"))

	// The full sync applies the rest and prunes b.
	requestSync(t, ks, "")
	waitReady(t, ks, "main@sha1:2222")
	g.Expect(configMapData(g, ctx, ns, "a")).To(Equal("a2"))
	expectAbsent(g, ctx, ns, "b")
}

// replaceName renames the ConfigMap a test's manifests call old, keeping
// its data.
func replaceName(manifests, old, name string) string {
	return replaceOnce(manifests, "name: "+old+"\n", "name: "+name+"\n")
}

func replaceOnce(s, old, repl string) string {
	for i := 0; i+len(old) <= len(s); i++ {
		if s[i:i+len(old)] == old {
			return s[:i] + repl + s[i+len(old):]
		}
	}
	panic("not found: " + old)
}

func TestManualKustomizationReportsDriftWithoutRevertingIt(t *testing.T) {
	g := NewWithT(t)
	ctx, ks := newKustomization(t, func(ks *kustomizev1.Kustomization) {
		ks.Spec.SyncPolicy = kustomizev1.SyncPolicyManual
	})
	ns := ks.Namespace
	subscription := subscribeEvents(t, ks)
	render(t, ks, "main@sha1:3333", configMaps(ns, "a"))
	waitOutOfSync(t, ks, kustomizev1.ManualSyncPendingReason, "main@sha1:3333")
	requestSync(t, ks, "")
	waitReady(t, ks, "main@sha1:3333")

	cm := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "a"}, cm)).To(Succeed())
	cm.Data["key"] = "edited"
	g.Expect(env.Client.Update(ctx, cm, client.FieldOwner("kubectl-edit"))).To(Succeed())

	out := waitOutOfSync(t, ks, kustomizev1.DriftDetectedReason, "main@sha1:3333")
	g.Expect(out.Change).To(Equal([]string{"ConfigMap/" + ns + "/a"}))
	got := &kustomizev1.Kustomization{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(ks), got)).To(Succeed())
	g.Expect(conditions.IsTrue(got, kustomizev1.DriftedCondition)).To(BeTrue())
	g.Expect(got.Status.Drift.Paths).To(ContainElement("ConfigMap/" + ns + "/a:data.key"))
	// The run that reported the drift is the one that would have
	// reverted it: the foreign value stands.
	g.Expect(configMapData(g, ctx, ns, "a")).To(Equal("edited"))
	g.Eventually(func() bool {
		return len(subscription.withReason(kustomizev1.DriftDetectedReason)) > 0
	}, 30*time.Second, 100*time.Millisecond).Should(BeTrue())
	g.Expect(subscription.withReason(kustomizev1.DriftCorrectedReason)).To(BeEmpty())

	// A sync puts Git's value back.
	requestSync(t, ks, "")
	g.Eventually(func(g Gomega) { g.Expect(configMapData(g, ctx, ns, "a")).To(Equal("a")) }, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(ks), got)).To(Succeed())
		g.Expect(conditions.Get(got, kustomizev1.OutOfSyncCondition)).To(BeNil())
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
}

func TestManualHelmReleaseIsReleasedOnlyWhenASyncIsAsked(t *testing.T) {
	g := NewWithT(t)
	ctx, hr := newHelmRelease(t, func(hr *helmv2.HelmRelease) {
		hr.Spec.SyncPolicy = kustomizev1.SyncPolicyManual
	})
	ns := hr.Namespace
	renderRelease(t, hr, "1.0.0", "v1", configMaps(ns, "a", "b"))
	out := waitOutOfSync(t, hr, kustomizev1.ManualSyncPendingReason, "1.0.0")
	g.Expect(out.Create).To(ConsistOf("ConfigMap/"+ns+"/a", "ConfigMap/"+ns+"/b"))
	expectAbsent(g, ctx, ns, "a")
	got := getRelease(g, hr)
	g.Expect(got.Status.History).To(BeEmpty())
	g.Expect(got.Status.LastAttemptedRevision).To(BeEmpty())

	// A selective sync applies a alone, and releases nothing.
	requestSync(t, hr, "ConfigMap/"+ns+"/a")
	out = waitOutOfSync(t, hr, kustomizev1.ManualSyncPendingReason, "1.0.0")
	g.Expect(out.Create).To(Equal([]string{"ConfigMap/" + ns + "/b"}))
	g.Expect(configMapData(g, ctx, ns, "a")).To(Equal("a"))
	expectAbsent(g, ctx, ns, "b")

	requestSync(t, hr, "")
	got = waitReleaseReady(t, hr, "1.0.0")
	g.Expect(got.Status.History).To(HaveLen(1))
	g.Expect(got.Status.OutOfSync).To(BeNil())
	g.Expect(configMapData(g, ctx, ns, "b")).To(Equal("b"))

	// Drift is reported, not corrected.
	cm := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "b"}, cm)).To(Succeed())
	cm.Data["key"] = "edited"
	g.Expect(env.Client.Update(ctx, cm, client.FieldOwner("kubectl-edit"))).To(Succeed())
	out = waitOutOfSync(t, hr, kustomizev1.DriftDetectedReason, "1.0.0")
	g.Expect(out.Change).To(Equal([]string{"ConfigMap/" + ns + "/b"}))
	g.Expect(configMapData(g, ctx, ns, "b")).To(Equal("edited"))

	// A new chart version waits.
	renderRelease(t, hr, "1.1.0", "v1", configMaps(ns, "a", "b", "c"))
	out = waitOutOfSync(t, hr, kustomizev1.ManualSyncPendingReason, "1.1.0")
	g.Expect(out.Create).To(Equal([]string{"ConfigMap/" + ns + "/c"}))
	got = getRelease(g, hr)
	g.Expect(got.Status.LastAppliedRevision).To(Equal("1.0.0"))
	g.Expect(got.Status.LastAttemptedRevision).To(Equal("1.0.0"))
	expectAbsent(g, ctx, ns, "c")
}
