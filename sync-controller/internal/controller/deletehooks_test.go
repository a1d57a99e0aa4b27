package controller

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
)

// kept says the ConfigMap is there and not being deleted; any read error
// but NotFound fails g.
func kept(ctx context.Context, g Gomega, ns, name string) bool {
	cm := &corev1.ConfigMap{}
	return exists(ctx, g, cm, ns, name) && cm.DeletionTimestamp == nil
}

// storedKustomization reads ks; nil when it is gone (NotFound), any other
// error fails g.
func storedKustomization(ctx context.Context, g Gomega, ks *kustomizev1.Kustomization) *kustomizev1.Kustomization {
	got := &kustomizev1.Kustomization{}
	if !exists(ctx, g, got, ks.Namespace, ks.Name) {
		return nil
	}
	return got
}

// Deleting a Kustomization runs its PreDelete hook before anything is
// pruned, prunes once the hook succeeded (and deletes it: HookSucceeded),
// runs its PostDelete hook once the pruned objects are gone, and lets the
// Kustomization go only when that hook succeeded. The sync before never
// ran either hook.
func TestDeleteHooksRunAroundThePrune(t *testing.T) {
	g := NewWithT(t)
	ctx, ks := newKustomization(t, nil)
	ns := ks.Namespace
	render(t, ks, "main@sha1:d1", waveConfigMap(ns, "settings", 0)+"---\n"+waveConfigMap(ns, "late", 3)+"---\n"+
		hookJob(ns, "drain", "PreDelete", "HookSucceeded")+"---\n"+hookJob(ns, "farewell", "PostDelete", ""))
	got := waitReady(t, ks, "main@sha1:d1")
	g.Expect(got.Status.Inventory.Entries).To(HaveLen(2), "delete hooks are not in the inventory")
	g.Expect(exists(ctx, g, &batchv1.Job{}, ns, "drain")).To(BeFalse(), "a sync runs no PreDelete hook")
	g.Expect(exists(ctx, g, &batchv1.Job{}, ns, "farewell")).To(BeFalse(), "a sync runs no PostDelete hook")

	g.Expect(env.Client.Delete(ctx, ks)).To(Succeed())
	g.Eventually(func(g Gomega) bool { return exists(ctx, g, &batchv1.Job{}, ns, "drain") }, 30*time.Second, 50*time.Millisecond).Should(BeTrue())
	// The hook runs: nothing is pruned, no PostDelete hook, the finalizer holds.
	g.Consistently(func(g Gomega) {
		g.Expect(kept(ctx, g, ns, "settings")).To(BeTrue(), "pruned before the PreDelete hook succeeded")
		g.Expect(kept(ctx, g, ns, "late")).To(BeTrue(), "pruned before the PreDelete hook succeeded")
		g.Expect(exists(ctx, g, &batchv1.Job{}, ns, "farewell")).To(BeFalse(), "PostDelete hook before the prune")
	}, time.Second, 100*time.Millisecond).Should(Succeed())
	held := storedKustomization(ctx, g, ks)
	g.Expect(held).NotTo(BeNil())
	g.Expect(controllerutil.ContainsFinalizer(held, kustomizev1.SyncFinalizer)).To(BeTrue())
	g.Expect(held.Status.Sync).To(And(Not(BeNil()), HaveField("Phase", kustomizev1.PhasePreDelete)))
	ready := conditions.Get(held, meta.ReadyCondition)
	g.Expect(ready.Status).To(Equal(metav1.ConditionUnknown))
	g.Expect(ready.Message).To(ContainSubstring("Job/" + ns + "/drain"))

	finishJob(t, ctx, ns, "drain", true)
	g.Eventually(func(g Gomega) bool { return exists(ctx, g, &batchv1.Job{}, ns, "farewell") }, 30*time.Second, 50*time.Millisecond).Should(BeTrue())
	// The PostDelete hook exists only once the pruned objects are gone.
	g.Expect(exists(ctx, g, &corev1.ConfigMap{}, ns, "settings")).To(BeFalse())
	g.Expect(exists(ctx, g, &corev1.ConfigMap{}, ns, "late")).To(BeFalse())
	g.Expect(exists(ctx, g, &batchv1.Job{}, ns, "drain")).To(BeFalse(), "HookSucceeded deletes the PreDelete hook")
	g.Consistently(func(g Gomega) *kustomizev1.Kustomization { return storedKustomization(ctx, g, ks) }, time.Second, 100*time.Millisecond).
		ShouldNot(BeNil(), "released while the PostDelete hook runs")
	g.Expect(storedKustomization(ctx, g, ks).Status.Sync.Phase).To(Equal(kustomizev1.PhasePostDelete))

	finishJob(t, ctx, ns, "farewell", true)
	g.Eventually(func(g Gomega) *kustomizev1.Kustomization { return storedKustomization(ctx, g, ks) }, 30*time.Second, 50*time.Millisecond).
		Should(BeNil())
	// BeforeHookCreation, the default: the hook stays, for its logs.
	g.Expect(exists(ctx, g, &batchv1.Job{}, ns, "farewell")).To(BeTrue())
}

// A failed PreDelete hook holds the deletion, prunes nothing and says so
// in Ready and an event; plumb.dev/force-delete: enabled lets it go,
// pruning as spec.prune says.
func TestAFailedPreDeleteHookHoldsTheDeletionUntilForced(t *testing.T) {
	g := NewWithT(t)
	ctx, ks := newKustomization(t, nil)
	ns := ks.Namespace
	evs := subscribeEvents(t, ks)
	render(t, ks, "main@sha1:f1", waveConfigMap(ns, "settings", 0)+"---\n"+
		hookJob(ns, "drain", "PreDelete", "")+"---\n"+hookJob(ns, "farewell", "PostDelete", ""))
	waitReady(t, ks, "main@sha1:f1")

	g.Expect(env.Client.Delete(ctx, ks)).To(Succeed())
	g.Eventually(func(g Gomega) bool { return exists(ctx, g, &batchv1.Job{}, ns, "drain") }, 30*time.Second, 50*time.Millisecond).Should(BeTrue())
	finishJob(t, ctx, ns, "drain", false)

	msg := waitNotReady(t, ks, kustomizev1.DeleteHookFailedReason)
	g.Expect(msg).To(ContainSubstring("PreDelete hook Job/" + ns + "/drain failed: job failed"))
	g.Expect(msg).To(ContainSubstring(kustomizev1.ForceDeleteAnnotation))
	g.Eventually(func() int { return len(evs.withReason(kustomizev1.DeleteHookFailedReason)) }, 10*time.Second).Should(Equal(1))
	g.Consistently(func(g Gomega) {
		g.Expect(kept(ctx, g, ns, "settings")).To(BeTrue(), "pruned after a failed PreDelete hook")
		g.Expect(exists(ctx, g, &batchv1.Job{}, ns, "farewell")).To(BeFalse(), "PostDelete hook after a failed PreDelete hook")
		g.Expect(storedKustomization(ctx, g, ks)).NotTo(BeNil(), "released after a failed PreDelete hook")
	}, 2*time.Second, 100*time.Millisecond).Should(Succeed())
	g.Expect(storedKustomization(ctx, g, ks).Status.Sync.Phase).To(Equal(kustomizev1.PhaseFailed))
	g.Expect(evs.withReason(kustomizev1.DeleteHookFailedReason)).To(HaveLen(1), "one event for one failure")

	current := storedKustomization(ctx, g, ks)
	patch := client.MergeFrom(current.DeepCopy())
	current.Annotations = map[string]string{kustomizev1.ForceDeleteAnnotation: kustomizev1.EnabledValue}
	g.Expect(env.Client.Patch(ctx, current, patch)).To(Succeed())

	g.Eventually(func(g Gomega) *kustomizev1.Kustomization { return storedKustomization(ctx, g, ks) }, 30*time.Second, 50*time.Millisecond).
		Should(BeNil())
	g.Expect(exists(ctx, g, &corev1.ConfigMap{}, ns, "settings")).To(BeFalse(), "the forced deletion prunes")
	g.Expect(exists(ctx, g, &batchv1.Job{}, ns, "farewell")).To(BeFalse(), "the forced deletion runs no hook")
	g.Eventually(func() int { return len(evs.withReason(kustomizev1.DeleteHooksSkippedReason)) }, 10*time.Second).Should(Equal(1))
}

// A HelmRelease's deletion is helm uninstall's: pre-delete hooks, the
// release's objects deleted, post-delete hooks, the same code as a
// Kustomization's.
func TestHelmReleaseDeletionRunsHelmDeleteHooks(t *testing.T) {
	g := NewWithT(t)
	ctx, hr := newHelmRelease(t, nil)
	ns := hr.Namespace
	renderRelease(t, hr, "1.0.0", "", strings.Join([]string{
		configMaps(ns, "stays"),
		helmHook(ns, "before-uninstall", "pre-delete", "0", "hook-succeeded"),
		helmHook(ns, "after-uninstall", "post-delete", "0", ""),
	}, "---\n"))
	got := waitReleaseReady(t, hr, "1.0.0")
	g.Expect(jobExists(ctx, g, ns, "before-uninstall")).To(BeFalse(), "a sync runs no pre-delete hook")

	g.Expect(env.Client.Delete(ctx, got)).To(Succeed())
	g.Eventually(func(g Gomega) bool { return jobExists(ctx, g, ns, "before-uninstall") }, 30*time.Second, 50*time.Millisecond).Should(BeTrue())
	g.Expect(kept(ctx, g, ns, "stays")).To(BeTrue(), "uninstalled before the pre-delete hook ran")
	finishJob(t, ctx, ns, "before-uninstall", true)
	g.Eventually(func(g Gomega) bool { return jobExists(ctx, g, ns, "after-uninstall") }, 30*time.Second, 50*time.Millisecond).Should(BeTrue())
	g.Expect(exists(ctx, g, &corev1.ConfigMap{}, ns, "stays")).To(BeFalse(), "the post-delete hook ran before the uninstall")
	g.Expect(exists(ctx, g, &helmv2.HelmRelease{}, ns, hr.Name)).To(BeTrue(), "released while the post-delete hook runs")
	finishJob(t, ctx, ns, "after-uninstall", true)
	g.Eventually(func(g Gomega) bool { return exists(ctx, g, &helmv2.HelmRelease{}, ns, hr.Name) }, 30*time.Second, 50*time.Millisecond).Should(BeFalse())
}

// spec.prune: false orphans the objects, as Flux does, and so runs no
// delete hook, as Argo CD's non-cascading deletion.
func TestDeletionWithoutPruneRunsNoDeleteHook(t *testing.T) {
	g := NewWithT(t)
	ctx, ks := newKustomization(t, func(ks *kustomizev1.Kustomization) { ks.Spec.Prune = false })
	ns := ks.Namespace
	render(t, ks, "main@sha1:o1", waveConfigMap(ns, "settings", 0)+"---\n"+hookJob(ns, "drain", "PreDelete", ""))
	waitReady(t, ks, "main@sha1:o1")

	g.Expect(env.Client.Delete(ctx, ks)).To(Succeed())
	g.Eventually(func(g Gomega) *kustomizev1.Kustomization { return storedKustomization(ctx, g, ks) }, 30*time.Second, 50*time.Millisecond).
		Should(BeNil())
	g.Expect(exists(ctx, g, &batchv1.Job{}, ns, "drain")).To(BeFalse(), "a PreDelete hook ran without prune")
	g.Expect(kept(ctx, g, ns, "settings")).To(BeTrue(), "pruned without prune")
}

// A controller restarted while a PreDelete hook runs resumes the deletion
// from status.sync: it finds the hook it created (the deletion's label),
// waits for it instead of running it again, and goes on.
func TestARestartedControllerResumesTheDeletion(t *testing.T) {
	controllerMu.Lock()
	defer controllerMu.Unlock()
	g := NewWithT(t)
	ctx, ks := newKustomization(t, nil)
	ns := ks.Namespace
	render(t, ks, "main@sha1:r1", waveConfigMap(ns, "settings", 0)+"---\n"+hookJob(ns, "drain", "PreDelete", ""))
	waitReady(t, ks, "main@sha1:r1")
	g.Expect(env.Client.Delete(ctx, ks)).To(Succeed())
	first := &batchv1.Job{}
	g.Eventually(func(g Gomega) bool { return exists(ctx, g, first, ns, "drain") }, 30*time.Second, 50*time.Millisecond).Should(BeTrue())
	g.Eventually(func(g Gomega) *kustomizev1.SyncProgress { return storedKustomization(ctx, g, ks).Status.Sync }, 10*time.Second).
		Should(And(Not(BeNil()), HaveField("Phase", kustomizev1.PhasePreDelete)))

	stopController()
	stopController = startController()
	g.Consistently(func(g Gomega) types.UID {
		job := &batchv1.Job{}
		g.Expect(exists(ctx, g, job, ns, "drain")).To(BeTrue())
		return job.UID
	}, time.Second, 100*time.Millisecond).Should(Equal(first.UID), "the hook ran again after the restart")
	g.Expect(kept(ctx, g, ns, "settings")).To(BeTrue())

	finishJob(t, ctx, ns, "drain", true)
	g.Eventually(func(g Gomega) *kustomizev1.Kustomization { return storedKustomization(ctx, g, ks) }, 30*time.Second, 50*time.Millisecond).
		Should(BeNil())
	g.Expect(exists(ctx, g, &corev1.ConfigMap{}, ns, "settings")).To(BeFalse())
}

// holdFinalizer keeps a deleted ConfigMap of these tests there until the
// test removes it: an object that takes its time to terminate.
const holdFinalizer = "example.com/hold"

// heldConfigMap is a ConfigMap that carries holdFinalizer from Git.
func heldConfigMap(ns, name string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: %s\n  finalizers: [%s]\ndata: {a: b}\n", name, ns, holdFinalizer)
}

// release removes holdFinalizer from the ConfigMap, letting a deleted one go.
func release(t *testing.T, ctx context.Context, ns, name string) {
	t.Helper()
	g := NewWithT(t)
	cm := &corev1.ConfigMap{}
	if !exists(ctx, g, cm, ns, name) {
		return
	}
	patch := client.MergeFrom(cm.DeepCopy())
	cm.Finalizers = nil
	g.Expect(env.Client.Patch(ctx, cm, patch)).To(Succeed())
}

// waitingKustomization is a Kustomization with deletionPolicy
// WaitForTermination and timeout, Ready with a render of the ConfigMap
// held (heldConfigMap, released at the end of the test) and the plain
// ConfigMaps others.
func waitingKustomization(t *testing.T, timeout time.Duration, revision, held string, others ...string) (context.Context, *kustomizev1.Kustomization) {
	t.Helper()
	ctx, ks := newKustomization(t, func(ks *kustomizev1.Kustomization) {
		ks.Spec.DeletionPolicy = kustomizev1.DeletionPolicyWaitForTermination
		ks.Spec.Timeout = &metav1.Duration{Duration: timeout}
	})
	t.Cleanup(func() { release(t, context.Background(), ks.Namespace, held) })
	manifests := heldConfigMap(ks.Namespace, held)
	for _, name := range others {
		manifests += "---\n" + waveConfigMap(ks.Namespace, name, 0)
	}
	render(t, ks, revision, manifests)
	waitReady(t, ks, revision)
	return ctx, ks
}

// deleteAndWaitGone deletes ks and waits until its finalizer let it go.
func deleteAndWaitGone(t *testing.T, ctx context.Context, ks *kustomizev1.Kustomization) {
	t.Helper()
	g := NewWithT(t)
	g.Expect(env.Client.Delete(ctx, ks)).To(Succeed())
	g.Eventually(func(g Gomega) *kustomizev1.Kustomization { return storedKustomization(ctx, g, ks) }, 30*time.Second, 50*time.Millisecond).
		Should(BeNil())
}

// deletionPolicy Delete deletes the objects even with prune false, runs
// the delete hooks around that, and leaves what the keep-annotation
// protects.
func TestDeletionPolicyDeleteDeletesWithoutPrune(t *testing.T) {
	g := NewWithT(t)
	ctx, ks := newKustomization(t, func(ks *kustomizev1.Kustomization) {
		ks.Spec.Prune = false
		ks.Spec.DeletionPolicy = kustomizev1.DeletionPolicyDelete
	})
	ns := ks.Namespace
	render(t, ks, "main@sha1:dp1", waveConfigMap(ns, "settings", 0)+"---\n"+keptConfigMap(ns, "precious")+"---\n"+
		hookJob(ns, "drain", "PreDelete", "HookSucceeded"))
	waitReady(t, ks, "main@sha1:dp1")

	g.Expect(env.Client.Delete(ctx, ks)).To(Succeed())
	g.Eventually(func(g Gomega) bool { return exists(ctx, g, &batchv1.Job{}, ns, "drain") }, 30*time.Second, 50*time.Millisecond).Should(BeTrue())
	g.Expect(kept(ctx, g, ns, "settings")).To(BeTrue(), "deleted before the PreDelete hook succeeded")
	finishJob(t, ctx, ns, "drain", true)
	g.Eventually(func(g Gomega) *kustomizev1.Kustomization { return storedKustomization(ctx, g, ks) }, 30*time.Second, 50*time.Millisecond).
		Should(BeNil())
	g.Expect(exists(ctx, g, &corev1.ConfigMap{}, ns, "settings")).To(BeFalse(), "Delete left the object with prune false")
	g.Expect(kept(ctx, g, ns, "precious")).To(BeTrue(), "Delete deleted an object annotated helm.sh/resource-policy: keep")
}

// deletionPolicy Orphan leaves the objects even with prune true, and runs
// no delete hook: there is nothing to prepare for or clean up after.
func TestDeletionPolicyOrphanLeavesWithPrune(t *testing.T) {
	g := NewWithT(t)
	ctx, ks := newKustomization(t, func(ks *kustomizev1.Kustomization) {
		ks.Spec.DeletionPolicy = kustomizev1.DeletionPolicyOrphan
	})
	ns := ks.Namespace
	render(t, ks, "main@sha1:dp2", waveConfigMap(ns, "settings", 0)+"---\n"+hookJob(ns, "drain", "PreDelete", ""))
	waitReady(t, ks, "main@sha1:dp2")

	deleteAndWaitGone(t, ctx, ks)
	g.Expect(kept(ctx, g, ns, "settings")).To(BeTrue(), "Orphan deleted the object")
	g.Expect(exists(ctx, g, &batchv1.Job{}, ns, "drain")).To(BeFalse(), "Orphan ran a PreDelete hook")
}

// deletionPolicy WaitForTermination holds the Kustomization, saying so in
// Ready and status.sync, while a deleted object is still terminating, and
// lets it go once the object is gone.
func TestDeletionPolicyWaitForTerminationHoldsUntilGone(t *testing.T) {
	g := NewWithT(t)
	ctx, ks := waitingKustomization(t, 10*time.Minute, "main@sha1:dp3", "slow", "quick")
	ns := ks.Namespace

	g.Expect(env.Client.Delete(ctx, ks)).To(Succeed())
	g.Eventually(func(g Gomega) string {
		held := storedKustomization(ctx, g, ks)
		g.Expect(held).NotTo(BeNil())
		ready := conditions.Get(held, meta.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Status).To(Equal(metav1.ConditionUnknown))
		g.Expect(held.Status.Sync).NotTo(BeNil())
		g.Expect(held.Status.Sync.Phase).To(Equal(kustomizev1.PhasePostDelete))
		return ready.Message
	}, 30*time.Second, 50*time.Millisecond).Should(And(
		ContainSubstring("deletionPolicy WaitForTermination"),
		ContainSubstring("1 deleted object(s)"),
		ContainSubstring("ConfigMap/"+ns+"/slow")))
	g.Expect(exists(ctx, g, &corev1.ConfigMap{}, ns, "quick")).To(BeFalse())
	g.Consistently(func(g Gomega) *kustomizev1.Kustomization { return storedKustomization(ctx, g, ks) }, time.Second, 100*time.Millisecond).
		ShouldNot(BeNil(), "released while a deleted object is still there")

	release(t, ctx, ns, "slow")
	g.Eventually(func(g Gomega) *kustomizev1.Kustomization { return storedKustomization(ctx, g, ks) }, 30*time.Second, 50*time.Millisecond).
		Should(BeNil())
}

// Past spec.timeout WaitForTermination stops waiting, as Flux does: the
// Kustomization goes while the object is still there, and an error event
// names it. MirrorPrune with prune true, the default, does not wait at all.
func TestDeletionPolicyWaitForTerminationGivesUpAfterTimeout(t *testing.T) {
	g := NewWithT(t)
	ctx, ks := waitingKustomization(t, 3*time.Second, "main@sha1:dp4", "stuck")
	ns := ks.Namespace
	evs := subscribeEvents(t, ks)

	deleteAndWaitGone(t, ctx, ks)
	cm := &corev1.ConfigMap{}
	g.Expect(exists(ctx, g, cm, ns, "stuck")).To(BeTrue())
	g.Expect(cm.DeletionTimestamp).NotTo(BeNil(), "WaitForTermination did not delete")
	g.Eventually(func() int { return len(evs.withReason(kustomizev1.TerminationTimeoutReason)) }, 10*time.Second).Should(Equal(1))
	g.Expect(evs.withReason(kustomizev1.TerminationTimeoutReason)[0].Message).To(ContainSubstring("ConfigMap/" + ns + "/stuck"))

	// The default deletes and does not wait.
	ctx, ks = newKustomization(t, nil)
	ns = ks.Namespace
	t.Cleanup(func() { release(t, context.Background(), ns, "stuck") })
	render(t, ks, "main@sha1:dp5", heldConfigMap(ns, "stuck"))
	waitReady(t, ks, "main@sha1:dp5")
	deleteAndWaitGone(t, ctx, ks)
	g.Expect(exists(ctx, g, cm, ns, "stuck")).To(BeTrue())
	g.Expect(cm.DeletionTimestamp).NotTo(BeNil(), "MirrorPrune with prune did not delete")
}

// The API server refuses a deletionPolicy or a buildMetadata option Flux
// does not have (the CRD's enums).
func TestDeletionPolicyAndBuildMetadataEnums(t *testing.T) {
	g := NewWithT(t)
	ctx, ks := newKustomization(t, nil)
	bad := ks.DeepCopy()
	bad.Name, bad.ResourceVersion = "bad", ""
	bad.Spec.DeletionPolicy = "Later"
	bad.Spec.BuildMetadata = []kustomizev1.BuildMetadataOption{"managedByLabel"}
	err := env.Client.Create(ctx, bad)
	g.Expect(err).To(HaveOccurred())
	g.Expect(err.Error()).To(And(ContainSubstring("spec.deletionPolicy"), ContainSubstring(`"Later"`),
		ContainSubstring("spec.buildMetadata[0]"), ContainSubstring(`"managedByLabel"`)))
}
