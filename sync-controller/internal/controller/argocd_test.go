package controller

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
)

// annotatedConfigMap is a ConfigMap with the annotations, a YAML flow map's
// inside ("a: b, c: d").
func annotatedConfigMap(ns, name, annotations, value string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: %s\n  annotations: {%s}\ndata:\n  key: %q\n", name, ns, annotations, value)
}

// argoHookJob is a Job annotated as Argo CD's repositories annotate hooks.
func argoHookJob(ns, name, hook, policy string) string {
	return fmt.Sprintf(`apiVersion: batch/v1
kind: Job
metadata:
  name: %s
  namespace: %s
  annotations: {argocd.argoproj.io/hook: %s, argocd.argoproj.io/hook-delete-policy: %s}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: before
        image: registry.example/curl:1.0
`, name, ns, hook, policy)
}

// TestArgoCDHooksAndWavesAreFollowed: a repository written for Argo CD —
// a PreSync hook deleted once it succeeded, a wave, an object Argo CD
// skips — syncs as Argo CD syncs it, and a Plumb annotation that
// disagrees with its Argo CD twin wins and is named in the status.
func TestArgoCDHooksAndWavesAreFollowed(t *testing.T) {
	g := NewWithT(t)
	ctx, ks := newKustomization(t, nil)
	ns := ks.Namespace
	render(t, ks, "main@sha1:a1", argoHookJob(ns, "before", "PreSync", "HookSucceeded")+"---\n"+
		annotatedConfigMap(ns, "later", `argocd.argoproj.io/sync-wave: "1"`, "v")+"---\n"+
		annotatedConfigMap(ns, "skipped", `argocd.argoproj.io/hook: Skip`, "v")+"---\n"+
		annotatedConfigMap(ns, "wave", `plumb.dev/sync-wave: "0", argocd.argoproj.io/sync-wave: "2"`, "v"))

	g.Eventually(func(g Gomega) bool { return exists(ctx, g, &batchv1.Job{}, ns, "before") }, 30*time.Second).Should(BeTrue())
	g.Consistently(func(g Gomega) bool { return exists(ctx, g, &corev1.ConfigMap{}, ns, "wave") }, 2*time.Second, 100*time.Millisecond).
		Should(BeFalse(), "the Sync phase waits for Argo CD's PreSync hook")
	finishJob(t, ctx, ns, "before", true)
	got := waitReady(t, ks, "main@sha1:a1")
	g.Eventually(func(g Gomega) bool { return exists(ctx, g, &batchv1.Job{}, ns, "before") }, 30*time.Second).
		Should(BeFalse(), "argocd.argoproj.io/hook-delete-policy: HookSucceeded deletes it")
	g.Expect(exists(ctx, g, &corev1.ConfigMap{}, ns, "skipped")).To(BeFalse(), "Skip is never applied")
	g.Expect(got.Status.Inventory.Entries).To(ConsistOf(
		HaveField("Name", "later"), HaveField("Name", "wave"),
	), "hooks and skipped objects are not in the inventory")
	g.Expect(got.Status.Sync.Warnings).To(ConsistOf(
		"ConfigMap/" + ns + `/wave: plumb.dev/sync-wave: "0" is followed, not argocd.argoproj.io/sync-wave: "2"`,
	))
	// Wave 1 after wave 0: the creation order shows it.
	later, wave := &corev1.ConfigMap{}, &corev1.ConfigMap{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "later"}, later)).To(Succeed())
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "wave"}, wave)).To(Succeed())
	g.Expect(resourceVersionOf(later)).To(BeNumerically(">", resourceVersionOf(wave)))
}

// TestArgoCDPruneAndDeleteOptions: Prune=false keeps an object from a
// sync's prune but not from the deletion of its Kustomization;
// Delete=false the other way round.
func TestArgoCDPruneAndDeleteOptions(t *testing.T) {
	g := NewWithT(t)
	ctx, ks := newKustomization(t, func(ks *kustomizev1.Kustomization) { ks.Spec.MaxPrunePercent = ptr.To[int32](100) })
	ns := ks.Namespace
	noPrune := annotatedConfigMap(ns, "no-prune", `argocd.argoproj.io/sync-options: Prune=false`, "v")
	noDelete := annotatedConfigMap(ns, "no-delete", `argocd.argoproj.io/sync-options: "Validate=true,Delete=false"`, "v")
	render(t, ks, "main@sha1:p1", noPrune+"---\n"+noDelete+"---\n"+configMaps(ns, "keep"))
	waitReady(t, ks, "main@sha1:p1")

	render(t, ks, "main@sha1:p2", noDelete+"---\n"+configMaps(ns, "keep"))
	waitReady(t, ks, "main@sha1:p2")
	g.Expect(exists(ctx, g, &corev1.ConfigMap{}, ns, "no-prune")).To(BeTrue(), "Prune=false keeps it from the prune")

	render(t, ks, "main@sha1:p3", noPrune+"---\n"+noDelete+"---\n"+configMaps(ns, "keep"))
	waitReady(t, ks, "main@sha1:p3")
	g.Expect(env.Client.Delete(ctx, ks)).To(Succeed())
	g.Eventually(func(g Gomega) bool { return exists(ctx, g, &kustomizev1.Kustomization{}, ns, ks.Name) }, 30*time.Second).Should(BeFalse())
	g.Expect(exists(ctx, g, &corev1.ConfigMap{}, ns, "keep")).To(BeFalse())
	g.Expect(exists(ctx, g, &corev1.ConfigMap{}, ns, "no-prune")).To(BeFalse(), "Prune=false does not keep it from the deletion")
	g.Expect(exists(ctx, g, &corev1.ConfigMap{}, ns, "no-delete")).To(BeTrue(), "Delete=false keeps it from the deletion")
}

// TestArgoCDReplaceForceAndCreateNamespace: Replace=true writes the whole
// object (a label someone else added is gone after the next change, where
// a server-side apply would keep it), Force=true recreates an object whose
// change the server refuses in place, CreateNamespace=true creates the
// namespace an object is in and leaves it when the Kustomization goes.
func TestArgoCDReplaceForceAndCreateNamespace(t *testing.T) {
	g := NewWithT(t)
	ctx, ks := newKustomization(t, nil)
	ns := ks.Namespace
	made := ns + "-made"
	frozen := func(v string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: frozen\n  namespace: %s\n  annotations: {argocd.argoproj.io/sync-options: Force=true}\nimmutable: true\ndata:\n  key: %s\n", ns, v)
	}
	set := func(v string) string {
		return annotatedConfigMap(ns, "replaced", `argocd.argoproj.io/sync-options: Replace=true`, v) + "---\n" +
			annotatedConfigMap(ns, "applied", `argocd.argoproj.io/sync-options: ServerSideApply=true`, v) + "---\n" +
			frozen(v) + "---\n" +
			annotatedConfigMap(made, "elsewhere", `argocd.argoproj.io/sync-options: CreateNamespace=true`, v)
	}
	render(t, ks, "main@sha1:r1", set("one"))
	waitReady(t, ks, "main@sha1:r1")
	g.Expect(exists(ctx, g, &corev1.Namespace{}, "", made)).To(BeTrue())
	g.Expect(exists(ctx, g, &corev1.ConfigMap{}, made, "elsewhere")).To(BeTrue())

	// Someone else labels both ConfigMaps; then Git changes them.
	for _, name := range []string{"replaced", "applied"} {
		cm := &corev1.ConfigMap{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cm)).To(Succeed())
		patch := client.MergeFrom(cm.DeepCopy())
		cm.Labels["team"] = "other"
		g.Expect(env.Client.Patch(ctx, cm, patch, client.FieldOwner("kubectl-edit"))).To(Succeed())
	}
	render(t, ks, "main@sha1:r2", set("two"))
	waitReady(t, ks, "main@sha1:r2")
	replaced, applied, recreated := &corev1.ConfigMap{}, &corev1.ConfigMap{}, &corev1.ConfigMap{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "replaced"}, replaced)).To(Succeed())
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "applied"}, applied)).To(Succeed())
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "frozen"}, recreated)).To(Succeed())
	g.Expect(replaced.Data).To(HaveKeyWithValue("key", "two"))
	g.Expect(replaced.Labels).NotTo(HaveKey("team"), "Replace=true writes the object whole")
	g.Expect(replaced.Labels).To(HaveKeyWithValue(kustomizev1.NameLabel, ks.Name))
	g.Expect(applied.Data).To(HaveKeyWithValue("key", "two"))
	g.Expect(applied.Labels).To(HaveKeyWithValue("team", "other"), "a server-side apply leaves others' fields")
	g.Expect(recreated.Data).To(HaveKeyWithValue("key", "two"), "Force=true recreates an immutable ConfigMap")

	g.Expect(env.Client.Delete(ctx, ks)).To(Succeed())
	g.Eventually(func(g Gomega) bool { return exists(ctx, g, &kustomizev1.Kustomization{}, ns, ks.Name) }, 30*time.Second).Should(BeFalse())
	g.Expect(exists(ctx, g, &corev1.ConfigMap{}, ns, "replaced")).To(BeFalse())
	ns2 := &corev1.Namespace{}
	g.Expect(exists(ctx, g, ns2, "", made)).To(BeTrue(), "the namespace CreateNamespace made stays")
	g.Expect(ns2.DeletionTimestamp).To(BeNil())
}

// TestArgoCDSkipDryRunOnMissingResource: without the option a custom
// resource of a kind the API server does not serve fails the sync before
// anything is applied; with it, the earlier waves are applied and the
// sync fails in the resource's own wave, then succeeds once the kind is
// there.
func TestArgoCDSkipDryRunOnMissingResource(t *testing.T) {
	g := NewWithT(t)
	ctx, ks := newKustomization(t, nil)
	ns := ks.Namespace
	widget := func(options string) string {
		return fmt.Sprintf("apiVersion: later.example.com/v1\nkind: Widget\nmetadata:\n  name: w\n  annotations: {argocd.argoproj.io/sync-wave: \"1\"%s}\nspec:\n  size: 1\n", options)
	}
	first := configMaps(ns, "first")
	render(t, ks, "main@sha1:m1", first+"---\n"+widget(""))
	msg := waitNotReady(t, ks, kustomizev1.ApplyFailedReason)
	g.Expect(msg).To(ContainSubstring("Widget"))
	g.Expect(exists(ctx, g, &corev1.ConfigMap{}, ns, "first")).To(BeFalse(), "nothing is applied")

	render(t, ks, "main@sha1:m2", first+"---\n"+widget(", argocd.argoproj.io/sync-options: SkipDryRunOnMissingResource=true"))
	msg = waitNotReady(t, ks, kustomizev1.SyncFailedReason)
	g.Expect(msg).To(ContainSubstring("Widget"))
	g.Expect(exists(ctx, g, &corev1.ConfigMap{}, ns, "first")).To(BeTrue(), "wave 0 is applied")
}

func resourceVersionOf(o client.Object) int64 {
	var n int64
	_, _ = fmt.Sscan(o.GetResourceVersion(), &n)
	return n
}
