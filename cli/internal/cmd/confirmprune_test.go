package cmd

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
)

const (
	heldDigestValue = "sha256:4b1d000000000000000000000000000000000000000000000000000000000000"
	heldRevision    = "main@sha1:4444444444444444444444444444444444444444"
)

// guarded sets the status sync-controller writes while the prune guard
// holds the render with digest; message names the digest to confirm.
func guarded(ks *kustomizev1.Kustomization, digest, messageDigest string) {
	ks.Status.ObservedGeneration = ks.Generation
	a := artifact(heldRevision)
	a.Digest = digest
	ks.Status.RenderedArtifact = a
	ks.Status.Conditions = []metav1.Condition{cond(meta.ReadyCondition, "False", kustomizev1.PruneGuardedReason,
		"prune guard: revision "+heldRevision+" would prune 4 of 4 objects (all of the inventory, and spec.allowEmpty is not set): ConfigMap/x/a. "+
			"Nothing was applied or deleted; to go ahead, confirm this render with the annotation "+kustomizev1.ConfirmPruneAnnotation+"="+messageDigest+
			" (plumb confirm-prune kustomization app)", ks.Generation)}
}

func TestConfirmPruneAnnotatesTheHeldRenderAndWaits(t *testing.T) {
	ctx, ns := newNamespace(t)
	g := NewWithT(t)
	ks := kustomization(ns, "app", "app")
	create(ctx, t, ks)
	setStatus(ctx, t, ks, func(k *kustomizev1.Kustomization) { guarded(k, heldDigestValue, heldDigestValue) })
	standIn(t, ks, outcome{ready: true, message: "Applied revision: " + heldRevision, revision: heldRevision}, writeKustomization)

	r := plumb("confirm-prune", "kustomization", "app", "-n", ns)
	g.Expect(r.code).To(Equal(ExitOK), r.String())
	out := lines(r.out)
	g.Expect(out[0]).To(HavePrefix("◎ prune guard: revision " + heldRevision + " would prune 4 of 4 objects"))
	g.Expect(out).To(ContainElement("► prune of render " + heldDigestValue + " confirmed for Kustomization/" + ns + "/app"))
	g.Expect(out[len(out)-1]).To(Equal("✔ Kustomization/" + ns + "/app reconciled, revision " + heldRevision))
	got := &kustomizev1.Kustomization{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(ks), got)).To(Succeed())
	g.Expect(got.Annotations).To(HaveKeyWithValue(kustomizev1.ConfirmPruneAnnotation, heldDigestValue))
}

func TestConfirmPruneRefusesWhatTheGuardDoesNotHold(t *testing.T) {
	ctx, ns := newNamespace(t)
	g := NewWithT(t)
	notHeld := kustomization(ns, "ready", "app")
	changed := kustomization(ns, "changed", "app")
	create(ctx, t, notHeld, changed)
	setStatus(ctx, t, notHeld, func(k *kustomizev1.Kustomization) {
		k.Status.ObservedGeneration = k.Generation
		k.Status.Conditions = []metav1.Condition{cond(meta.ReadyCondition, "True", meta.SucceededReason, "Applied revision: x", k.Generation)}
	})
	// A new render arrived after the guard held the previous one.
	setStatus(ctx, t, changed, func(k *kustomizev1.Kustomization) {
		guarded(k, "sha256:5e10000000000000000000000000000000000000000000000000000000000000", heldDigestValue)
	})

	r := plumb("confirm-prune", "kustomization", "ready", "-n", ns)
	g.Expect(r.code).To(Equal(ExitError), r.String())
	g.Expect(r.errOut).To(ContainSubstring("Kustomization/" + ns + "/ready is not held by the prune guard (Ready=True, Succeeded)"))

	r = plumb("confirm-prune", "kustomization", "changed", "-n", ns)
	g.Expect(r.code).To(Equal(ExitError), r.String())
	g.Expect(r.errOut).To(ContainSubstring("the render changed since the prune guard held it"))

	for _, name := range []string{"ready", "changed"} {
		got := &kustomizev1.Kustomization{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, got)).To(Succeed())
		g.Expect(got.Annotations).NotTo(HaveKey(kustomizev1.ConfirmPruneAnnotation), name)
	}
}
