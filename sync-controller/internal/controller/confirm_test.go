package controller

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
)

// An object annotated Prune=confirm (Argo CD) or plumb.dev/prune: confirm
// that leaves Git is not pruned, and nothing of the render is applied,
// until the render is confirmed; an ordinary object leaving is pruned
// without a question.
func TestPruneConfirmHoldsTheSyncUntilTheRenderIsConfirmed(t *testing.T) {
	g := NewWithT(t)
	ctx, ks := newKustomization(t, nil)
	ns := ks.Namespace
	argo := annotatedConfigMap(ns, "argo", `argocd.argoproj.io/sync-options: "ServerSideApply=true, Prune=confirm"`, "argo")
	plumb := annotatedConfigMap(ns, "plumb", kustomizev1.PruneAnnotation+": "+kustomizev1.ConfirmValue, "plumb")
	plain := configMaps(ns, "a", "b", "c", "d")
	render(t, ks, "main@sha1:p001", strings.Join([]string{argo, plumb, plain}, "---\n"))
	waitReady(t, ks, "main@sha1:p001")

	// One plain object of six leaves: pruned at once.
	render(t, ks, "main@sha1:p002", strings.Join([]string{argo, plumb, configMaps(ns, "a", "b", "c")}, "---\n"))
	waitReady(t, ks, "main@sha1:p002")
	waitGone(ctx, g, ns, "d")

	// The two that ask for a confirmation leave, and a new one comes.
	render(t, ks, "main@sha1:p003", configMaps(ns, "a", "b", "c", "new"))
	msg := waitNotReady(t, ks, kustomizev1.PruneGuardedReason)
	g.Expect(msg).To(ContainSubstring("revision main@sha1:p003 would prune 2 object(s) that ask for a confirmation"))
	g.Expect(msg).To(ContainSubstring("ConfigMap/" + ns + "/argo (annotation argocd.argoproj.io/sync-options: Prune=confirm)"))
	g.Expect(msg).To(ContainSubstring("ConfigMap/" + ns + "/plumb (annotation plumb.dev/prune: confirm)"))
	g.Expect(msg).To(ContainSubstring(kustomizev1.ConfirmPruneAnnotation + "=sha256:"))
	objectsExist(ctx, g, ns, "argo", "plumb", "a", "b", "c")
	err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "new"}, &corev1.ConfigMap{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "a held sync applies nothing: %v", err)

	held := &kustomizev1.Kustomization{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(ks), held)).To(Succeed())
	patchKustomization(t, ks, func(k *kustomizev1.Kustomization) {
		k.Annotations = map[string]string{kustomizev1.ConfirmPruneAnnotation: held.Status.RenderedArtifact.Digest}
	})
	waitReady(t, ks, "main@sha1:p003")
	waitGone(ctx, g, ns, "argo", "plumb")
	objectsExist(ctx, g, ns, "a", "b", "c", "new")
}

// The deletion of a Kustomization whose objects ask for a confirmation
// (Delete=confirm, plumb.dev/prune: confirm) deletes nothing until a
// person confirms it after the deletion began: a confirm-delete annotation
// that was already there counts for nothing. Prune=confirm alone asks
// nothing of a deletion.
func TestDeleteConfirmHoldsTheDeletionUntilConfirmed(t *testing.T) {
	g := NewWithT(t)
	ctx, ks := newKustomization(t, func(k *kustomizev1.Kustomization) {
		k.Annotations = map[string]string{kustomizev1.ConfirmDeleteAnnotation: "2020-01-01T00:00:00Z"}
	})
	ns := ks.Namespace
	render(t, ks, "main@sha1:d001", strings.Join([]string{
		annotatedConfigMap(ns, "database", `argocd.argoproj.io/sync-options: "Delete=confirm"`, "database"),
		annotatedConfigMap(ns, "prune-only", `argocd.argoproj.io/sync-options: "Prune=confirm"`, "prune-only"),
		annotatedConfigMap(ns, "kept", `argocd.argoproj.io/sync-options: "Delete=false,Delete=confirm"`, "kept"),
		configMaps(ns, "plain"),
	}, "---\n"))
	waitReady(t, ks, "main@sha1:d001")

	g.Expect(env.Client.Delete(ctx, ks)).To(Succeed())
	msg := waitNotReady(t, ks, kustomizev1.DeletionConfirmationRequiredReason)
	g.Expect(msg).To(ContainSubstring("1 object(s) ask for one: ConfigMap/" + ns + "/database (annotation argocd.argoproj.io/sync-options: Delete=confirm)"))
	g.Expect(msg).To(ContainSubstring("plumb confirm-delete kustomization app"))
	objectsExist(ctx, g, ns, "database", "prune-only", "kept", "plain")
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(ks), &kustomizev1.Kustomization{})).To(Succeed())

	patchKustomization(t, ks, func(k *kustomizev1.Kustomization) {
		k.Annotations[kustomizev1.ConfirmDeleteAnnotation] = time.Now().UTC().Format(time.RFC3339)
	})
	waitGone(ctx, g, ns, "database", "prune-only", "plain")
	g.Eventually(func() error {
		return env.Client.Get(ctx, client.ObjectKeyFromObject(ks), &kustomizev1.Kustomization{})
	}, 30*time.Second, 50*time.Millisecond).Should(Satisfy(apierrors.IsNotFound))
	objectsExist(ctx, g, ns, "kept")
}

// With spec.failOnSharedResource a Kustomization whose render has an
// object another Kustomization manages applies nothing and says whose it
// is; without it, the object is taken over.
func TestFailOnSharedResourceRefusesAnotherOwnersObject(t *testing.T) {
	g := NewWithT(t)
	ctx, first := newKustomization(t, nil)
	ns := first.Namespace
	render(t, first, "main@sha1:s001", configMaps(ns, "shared"))
	waitReady(t, first, "main@sha1:s001")

	second := &kustomizev1.Kustomization{
		ObjectMeta: metav1.ObjectMeta{Name: "second", Namespace: ns},
		Spec:       *first.Spec.DeepCopy(),
	}
	second.Spec.FailOnSharedResource = true
	g.Expect(env.Client.Create(ctx, second)).To(Succeed())
	render(t, second, "main@sha1:s002", configMaps(ns, "shared", "own"))
	msg := waitNotReady(t, second, kustomizev1.SharedResourceReason)
	g.Expect(msg).To(ContainSubstring("ConfigMap/" + ns + "/shared (managed by Kustomization " + ns + "/app)"))
	err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "own"}, &corev1.ConfigMap{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "a refused sync applies nothing: %v", err)
	cm := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "shared"}, cm)).To(Succeed())
	g.Expect(cm.Labels).To(HaveKeyWithValue(kustomizev1.NameLabel, "app"))

	// Once the field is off, the apply takes the object over.
	patchKustomization(t, second, func(k *kustomizev1.Kustomization) { k.Spec.FailOnSharedResource = false })
	render(t, second, "main@sha1:s002", configMaps(ns, "shared", "own"))
	waitReady(t, second, "main@sha1:s002")
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "shared"}, cm)).To(Succeed())
	g.Expect(cm.Labels).To(HaveKeyWithValue(kustomizev1.NameLabel, "second"))
}

// spec.prunePropagationPolicy reaches the API server: with orphan, a
// pruned object carries the orphan finalizer (the garbage collector, which
// this test bed does not run, would remove it after orphaning the
// dependents); with the default, background, it is gone at once.
func TestPrunePropagationPolicyIsTheDeletesPolicy(t *testing.T) {
	g := NewWithT(t)
	ctx, ks := newKustomization(t, func(k *kustomizev1.Kustomization) {
		k.Spec.PrunePropagationPolicy = kustomizev1.PrunePropagationOrphan
	})
	ns := ks.Namespace
	render(t, ks, "main@sha1:o001", configMaps(ns, "a", "b", "c", "d"))
	waitReady(t, ks, "main@sha1:o001")
	render(t, ks, "main@sha1:o002", configMaps(ns, "a", "b", "c"))
	waitReady(t, ks, "main@sha1:o002")
	cm := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "d"}, cm)).To(Succeed())
	g.Expect(cm.DeletionTimestamp).NotTo(BeNil())
	g.Expect(cm.Finalizers).To(ContainElement(metav1.FinalizerOrphanDependents))
	// Let it go, as the garbage collector would.
	cm.Finalizers = nil
	g.Expect(env.Client.Update(ctx, cm)).To(Succeed())

	patchKustomization(t, ks, func(k *kustomizev1.Kustomization) { k.Spec.PrunePropagationPolicy = "" })
	render(t, ks, "main@sha1:o003", configMaps(ns, "a", "b"))
	waitReady(t, ks, "main@sha1:o003")
	waitGone(ctx, g, ns, "c")
}
