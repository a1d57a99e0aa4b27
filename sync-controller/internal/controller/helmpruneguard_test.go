package controller

import (
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
)

// waitReleaseNotReady waits for Ready=False with the reason and a message
// that contains the given text, and returns the message.
func waitReleaseNotReady(t *testing.T, hr *helmv2.HelmRelease, reason, containing string) string {
	t.Helper()
	var message string
	NewWithT(t).Eventually(func(g Gomega) {
		ready := conditions.Get(getRelease(g, hr), meta.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(ready.Reason).To(Equal(reason), ready.Message)
		g.Expect(ready.Message).To(ContainSubstring(containing))
		message = ready.Message
	}, time.Minute, 100*time.Millisecond).Should(Succeed())
	return message
}

// annotateRelease sets an annotation on the HelmRelease.
func annotateRelease(t *testing.T, hr *helmv2.HelmRelease, key, value string) {
	t.Helper()
	g := NewWithT(t)
	current := getRelease(g, hr)
	patch := client.MergeFrom(current.DeepCopy())
	if current.Annotations == nil {
		current.Annotations = map[string]string{}
	}
	current.Annotations[key] = value
	g.Expect(env.Client.Patch(t.Context(), current, patch)).To(Succeed())
}

// A chart version that renders nothing would uninstall the release by
// pruning; one that drops most of it likewise. Both are held before
// anything is applied — no hook, no apply, no deletion, no release in the
// history — with Ready=False PruneGuarded and one event per held render,
// until the HelmRelease is annotated with the digest of that render.
func TestHelmReleasePruneGuard(t *testing.T) {
	g := NewWithT(t)
	ctx, hr := newHelmRelease(t, nil)
	ns := hr.Namespace
	evs := subscribeKind(t, helmv2.HelmReleaseKind, ns, hr.Name)
	renderRelease(t, hr, "1.0.0", "", configMaps(ns, "a", "b", "c", "d"))
	installed := waitReleaseReady(t, hr, "1.0.0")

	// A broken chart: it renders nothing, and even its upgrade hook is
	// held.
	renderRelease(t, hr, "2.0.0", "", helmHook(ns, "migrate", "pre-upgrade", "0", ""))
	msg := waitReleaseNotReady(t, hr, kustomizev1.PruneGuardedReason, "revision 2.0.0")
	g.Expect(msg).To(ContainSubstring("revision 2.0.0 would prune 4 of 4 objects (all of the inventory): ConfigMap/" + ns + "/a"))
	g.Expect(msg).To(ContainSubstring(kustomizev1.ConfirmPruneAnnotation + "=sha256:"))
	g.Expect(msg).To(HaveSuffix("(plumb confirm-prune helmrelease app)"))
	requestRelease(t, hr)
	got := getRelease(g, hr)
	g.Expect(got.Status.LastAppliedRevision).To(Equal("1.0.0"))
	g.Expect(got.Status.LastAttemptedRevision).To(Equal("2.0.0"))
	g.Expect(got.Status.Inventory).To(Equal(installed.Status.Inventory))
	g.Expect(releases(got)).To(Equal([]string{"1:1.0.0:deployed"}), "a held render is no release")
	g.Expect(jobExists(ctx, g, ns, "migrate")).To(BeFalse(), "a held render runs no hook")
	objectsExist(ctx, g, ns, "a", "b", "c", "d")

	// Most of the release gone: held by sync-controller's
	// --max-prune-percent (a HelmRelease has no maxPrunePercent).
	renderRelease(t, hr, "3.0.0", "", configMaps(ns, "a", "elsewhere"))
	msg = waitReleaseNotReady(t, hr, kustomizev1.PruneGuardedReason, "revision 3.0.0")
	g.Expect(msg).To(ContainSubstring("revision 3.0.0 would prune 3 of 4 objects (75% of the inventory, more than the 50% that sync-controller's --max-prune-percent allows)"))
	g.Expect(exists(ctx, g, &corev1.ConfigMap{}, ns, "elsewhere")).To(BeFalse(), "a held render applies nothing")

	// A confirmation of the render already released confirms nothing new;
	// the held render's digest lets it through.
	annotateRelease(t, hr, kustomizev1.ConfirmPruneAnnotation, installed.Status.RenderedArtifact.Digest)
	requestRelease(t, hr)
	g.Expect(waitReleaseNotReady(t, hr, kustomizev1.PruneGuardedReason, "revision 3.0.0")).To(Equal(msg))
	objectsExist(ctx, g, ns, "a", "b", "c", "d")
	annotateRelease(t, hr, kustomizev1.ConfirmPruneAnnotation, getRelease(g, hr).Status.RenderedArtifact.Digest)
	got = waitReleaseReady(t, hr, "3.0.0")
	g.Expect(got.Status.Inventory.Entries).To(HaveLen(2))
	g.Expect(releases(got)).To(Equal([]string{"2:3.0.0:deployed", "1:1.0.0:superseded"}))
	waitGone(ctx, g, ns, "b", "c", "d")
	objectsExist(ctx, g, ns, "a", "elsewhere")

	// Events are published in order: once Pruned has arrived, both
	// PruneGuarded events have too, one per held render.
	g.Eventually(func() int { return len(evs.withReason(kustomizev1.PrunedReason)) }, 30*time.Second, 50*time.Millisecond).Should(Equal(1))
	guarded := evs.withReason(kustomizev1.PruneGuardedReason)
	g.Expect(guarded).To(HaveLen(2))
	g.Expect(guarded[0].Metadata).To(HaveKeyWithValue("prune", "4"))
	g.Expect(guarded[1].Metadata).To(HaveKeyWithValue("prune", "3"))

	// The guard holds syncs, not the uninstall.
	g.Expect(env.Client.Delete(ctx, got)).To(Succeed())
	waitGone(ctx, g, ns, "a", "elsewhere")
}
