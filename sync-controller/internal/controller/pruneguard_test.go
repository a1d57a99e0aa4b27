package controller

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
)

func TestPruneGuardRules(t *testing.T) {
	spec := func(mutate func(*kustomizev1.KustomizationSpec)) kustomizev1.KustomizationSpec {
		s := kustomizev1.KustomizationSpec{Prune: true}
		if mutate != nil {
			mutate(&s)
		}
		return s
	}
	allowEmpty := func(s *kustomizev1.KustomizationSpec) { s.AllowEmpty = true }
	percent := func(p int32) func(*kustomizev1.KustomizationSpec) {
		return func(s *kustomizev1.KustomizationSpec) { s.MaxPrunePercent = ptr.To(p) }
	}
	noPrune := func(s *kustomizev1.KustomizationSpec) { s.Prune = false }
	cases := []struct {
		name           string
		spec           kustomizev1.KustomizationSpec
		removed, total int
		held           string // a substring of the reason; "" when the sync may proceed
	}{
		{"nothing removed", spec(nil), 0, 10, ""},
		{"one of the sample's four objects", spec(nil), 1, 4, ""},
		{"exactly half is not more than half", spec(nil), 2, 4, ""},
		{"more than half of four", spec(nil), 3, 4, "75% of the inventory, more than the 50% that sync-controller's --max-prune-percent allows"},
		{"everything of one object", spec(nil), 1, 1, "all of the inventory, and spec.allowEmpty is not set"},
		{"everything of many", spec(nil), 10, 10, "all of the inventory"},
		{"allowEmpty allows everything", spec(allowEmpty), 10, 10, ""},
		{"allowEmpty does not lift the share guard", spec(allowEmpty), 9, 10, "90%"},
		{"a small inventory has no share guard", spec(nil), 2, 3, ""},
		{"the spec's percent wins", spec(percent(90)), 9, 10, ""},
		{"the spec's percent is named", spec(percent(10)), 2, 10, "more than the 10% that spec.maxPrunePercent allows"},
		{"100 turns the share guard off", spec(percent(100)), 9, 10, ""},
		{"100 still guards everything", spec(percent(100)), 10, 10, "all of the inventory"},
		{"0 holds every prune of a large inventory", spec(percent(0)), 1, 10, "10%"},
		{"no guard without prune", spec(noPrune), 10, 10, ""},
	}
	// A HelmRelease always prunes and has neither allowEmpty nor
	// maxPrunePercent: sync-controller's thresholds alone.
	for _, c := range []struct {
		name           string
		removed, total int
		held           string
	}{
		{"a HelmRelease: everything of one object", 1, 1, "all of the inventory"},
		{"a HelmRelease: more than the flag's share", 3, 4, "75% of the inventory, more than the 50% that sync-controller's --max-prune-percent allows"},
		{"a HelmRelease: half", 2, 4, ""},
		{"a HelmRelease: a small release has no share guard", 2, 3, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := DefaultPruneGuard.holds(helmRelease{&helmv2.HelmRelease{}}.spec(), c.removed, c.total)
			if c.held == "" {
				NewWithT(t).Expect(got).To(BeEmpty())
			} else {
				NewWithT(t).Expect(got).To(Equal(c.held))
			}
		})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := DefaultPruneGuard.holds(kustomization{&kustomizev1.Kustomization{Spec: c.spec}}.spec(), c.removed, c.total)
			if c.held == "" {
				NewWithT(t).Expect(got).To(BeEmpty())
			} else {
				NewWithT(t).Expect(got).To(ContainSubstring(c.held))
			}
		})
	}
}

// objectsExist fails unless every named ConfigMap exists; a Get that fails
// for any reason fails the test.
func objectsExist(ctx context.Context, g *WithT, ns string, names ...string) {
	for _, n := range names {
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: n}, &corev1.ConfigMap{})).To(Succeed(), "ConfigMap %s", n)
	}
}

// waitGone waits until every named ConfigMap is gone; an error other than
// NotFound never counts as gone.
func waitGone(ctx context.Context, g *WithT, ns string, names ...string) {
	for _, n := range names {
		g.Eventually(func() error {
			return env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: n}, &corev1.ConfigMap{})
		}, 30*time.Second, 50*time.Millisecond).Should(Satisfy(apierrors.IsNotFound), "ConfigMap %s is not pruned", n)
	}
}

func patchKustomization(t *testing.T, ks *kustomizev1.Kustomization, mutate func(*kustomizev1.Kustomization)) {
	t.Helper()
	g := NewWithT(t)
	current := &kustomizev1.Kustomization{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(ks), current)).To(Succeed())
	patch := client.MergeFrom(current.DeepCopy())
	mutate(current)
	g.Expect(env.Client.Patch(context.Background(), current, patch)).To(Succeed())
}

// An empty commit (`resources: []`, a rendered artifact with no object)
// deletes nothing: Ready=False PruneGuarded naming 4 of 4, one event however
// often the sync runs again, until spec.allowEmpty lets it prune everything.
func TestEmptyRenderIsHeldUntilAllowEmpty(t *testing.T) {
	g := NewWithT(t)
	ctx, ks := newKustomization(t, nil)
	events := subscribeEvents(t, ks)
	render(t, ks, "main@sha1:e001", configMaps(ks.Namespace, "a", "b", "c")+"---\n"+deployment(ks.Namespace, "web", 1))
	before := waitReady(t, ks, "main@sha1:e001")

	render(t, ks, "main@sha1:e002", "")
	msg := waitNotReady(t, ks, kustomizev1.PruneGuardedReason)
	g.Expect(msg).To(ContainSubstring("revision main@sha1:e002 would prune 4 of 4 objects (all of the inventory, and spec.allowEmpty is not set)"))
	g.Expect(msg).To(ContainSubstring("Deployment/" + ks.Namespace + "/web"))
	g.Expect(msg).To(ContainSubstring(kustomizev1.ConfirmPruneAnnotation + "=sha256:"))

	// Syncs that run again hold the render again, silently.
	requestReconcile(t, ks)
	requestReconcile(t, ks)
	got := &kustomizev1.Kustomization{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(ks), got)).To(Succeed())
	g.Expect(got.Status.LastAppliedRevision).To(Equal("main@sha1:e001"))
	g.Expect(got.Status.LastAttemptedRevision).To(Equal("main@sha1:e002"))
	g.Expect(got.Status.Inventory).To(Equal(before.Status.Inventory))
	objectsExist(ctx, g, ks.Namespace, "a", "b", "c")
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ks.Namespace, Name: "web"}, &appsv1.Deployment{})).To(Succeed())

	patchKustomization(t, ks, func(k *kustomizev1.Kustomization) { k.Spec.AllowEmpty = true })
	render(t, ks, "main@sha1:e002", "") // render-controller renders the new generation
	got = waitReady(t, ks, "main@sha1:e002")
	g.Expect(got.Status.Inventory.Entries).To(BeEmpty())
	waitGone(ctx, g, ks.Namespace, "a", "b", "c")
	g.Eventually(func() error {
		return env.Client.Get(ctx, client.ObjectKey{Namespace: ks.Namespace, Name: "web"}, &appsv1.Deployment{})
	}, 30*time.Second, 50*time.Millisecond).Should(Satisfy(apierrors.IsNotFound))

	// Events are published in order: once Pruned has arrived, every
	// PruneGuarded event recorded before it has too.
	g.Eventually(func() int { return len(events.withReason(kustomizev1.PrunedReason)) }, 30*time.Second, 50*time.Millisecond).Should(Equal(1))
	guarded := events.withReason(kustomizev1.PruneGuardedReason)
	g.Expect(guarded).To(HaveLen(1))
	g.Expect(guarded[0].Message).To(Equal(msg))
	g.Expect(guarded[0].Metadata).To(HaveKeyWithValue("prune", "4"))
	g.Expect(guarded[0].Metadata).To(HaveKeyWithValue("inventory", "4"))
	g.Expect(events.withReason(kustomizev1.SyncFailedReason)).To(BeEmpty())
}

// A commit that moves the contents of spec.path away leaves one of six
// objects and adds another: held under the default threshold (more than
// half), with nothing applied; spec.maxPrunePercent raised lets it through.
func TestMostOfTheInventoryGoneIsHeldUnderTheThreshold(t *testing.T) {
	g := NewWithT(t)
	ctx, ks := newKustomization(t, nil)
	render(t, ks, "main@sha1:f001", configMaps(ks.Namespace, "a", "b", "c", "d", "e", "f"))
	waitReady(t, ks, "main@sha1:f001")

	// Removing two of six (33%) is an ordinary prune.
	render(t, ks, "main@sha1:f002", configMaps(ks.Namespace, "a", "b", "c", "d"))
	waitReady(t, ks, "main@sha1:f002")
	waitGone(ctx, g, ks.Namespace, "e", "f")

	render(t, ks, "main@sha1:f003", configMaps(ks.Namespace, "a", "elsewhere"))
	msg := waitNotReady(t, ks, kustomizev1.PruneGuardedReason)
	g.Expect(msg).To(ContainSubstring("would prune 3 of 4 objects (75% of the inventory, more than the 50% that sync-controller's --max-prune-percent allows)"))
	objectsExist(ctx, g, ks.Namespace, "a", "b", "c", "d")
	err := env.Client.Get(ctx, client.ObjectKey{Namespace: ks.Namespace, Name: "elsewhere"}, &corev1.ConfigMap{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "a held sync applies nothing: %v", err)

	patchKustomization(t, ks, func(k *kustomizev1.Kustomization) { k.Spec.MaxPrunePercent = ptr.To[int32](80) })
	render(t, ks, "main@sha1:f003", configMaps(ks.Namespace, "a", "elsewhere"))
	got := waitReady(t, ks, "main@sha1:f003")
	g.Expect(got.Status.Inventory.Entries).To(HaveLen(2))
	waitGone(ctx, g, ks.Namespace, "b", "c", "d")
	objectsExist(ctx, g, ks.Namespace, "a", "elsewhere")
}

// A legitimate large removal, confirmed by annotating the Kustomization
// with the digest of its render, proceeds; a confirmation of another render
// does not count, and a later render is guarded again. Deleting the
// Kustomization still prunes everything.
func TestConfirmedRemovalProceedsAndTheNextIsGuardedAgain(t *testing.T) {
	g := NewWithT(t)
	ctx, ks := newKustomization(t, nil)
	render(t, ks, "main@sha1:c001", configMaps(ks.Namespace, "a", "b", "c", "d", "e"))
	first := waitReady(t, ks, "main@sha1:c001")

	render(t, ks, "main@sha1:c002", configMaps(ks.Namespace, "a"))
	waitNotReady(t, ks, kustomizev1.PruneGuardedReason)

	// The digest of the render already applied confirms nothing new.
	patchKustomization(t, ks, func(k *kustomizev1.Kustomization) {
		k.Annotations = map[string]string{kustomizev1.ConfirmPruneAnnotation: first.Status.RenderedArtifact.Digest}
	})
	requestReconcile(t, ks)
	msg := waitNotReady(t, ks, kustomizev1.PruneGuardedReason)
	g.Expect(msg).To(ContainSubstring("would prune 4 of 5 objects"))
	objectsExist(ctx, g, ks.Namespace, "a", "b", "c", "d", "e")

	held := &kustomizev1.Kustomization{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(ks), held)).To(Succeed())
	patchKustomization(t, ks, func(k *kustomizev1.Kustomization) {
		k.Annotations[kustomizev1.ConfirmPruneAnnotation] = held.Status.RenderedArtifact.Digest
	})
	got := waitReady(t, ks, "main@sha1:c002")
	g.Expect(got.Status.Inventory.Entries).To(HaveLen(1))
	waitGone(ctx, g, ks.Namespace, "b", "c", "d", "e")
	objectsExist(ctx, g, ks.Namespace, "a")

	render(t, ks, "main@sha1:c003", "")
	msg = waitNotReady(t, ks, kustomizev1.PruneGuardedReason)
	g.Expect(msg).To(ContainSubstring("would prune 1 of 1 objects (all of the inventory"))
	objectsExist(ctx, g, ks.Namespace, "a")

	// The guard holds syncs, not the deletion of the Kustomization.
	g.Expect(env.Client.Delete(ctx, ks)).To(Succeed())
	waitGone(ctx, g, ks.Namespace, "a")
}
