package controller

import (
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	"plumb.dev/pkg/inventory"
)

// While a sync waits for a wave to be healthy, Ready and Reconciling say
// so — the phase and wave, how many objects are applied, and which object
// is not healthy yet and why — and status.inventory already holds what was
// applied, so `plumb tree` and `kubectl` show it; nothing of the wait for
// render-controller before it lingers. Once the wave is healthy the sync
// goes on and ends Ready.
func TestASyncShowsWhatItWaitsFor(t *testing.T) {
	g := NewWithT(t)
	ctx, ks := newKustomization(t, nil)
	ns := ks.Namespace
	render(t, ks, "main@sha1:p1", deployment(ns, "web", 1)+"---\n"+waveConfigMap(ns, "after", 1))

	var got kustomizev1.Kustomization
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(ks), &got)).To(Succeed())
		ready := conditions.Get(&got, meta.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Status).To(Equal(metav1.ConditionUnknown))
		g.Expect(ready.Message).To(ContainSubstring("waiting for 1 object to be healthy: Deployment/" + ns + "/web is Progressing"))
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	ready := conditions.Get(&got, meta.ReadyCondition)
	g.Expect(ready.Reason).To(Equal(meta.ProgressingReason))
	g.Expect(ready.Message).To(HavePrefix("running Sync phase, wave 0 (1 of 2) of revision main@sha1:p1: 1 of 2 objects applied; "))
	g.Expect(ready.Message).NotTo(ContainSubstring("render-controller"))
	g.Expect(conditions.GetMessage(&got, meta.ReconcilingCondition)).To(Equal(ready.Message))
	g.Expect(got.Status.Sync.Phase).To(Equal(string(kustomizev1.PhaseSync)))
	g.Expect(got.Status.Sync.Wave).To(Equal(0))
	ids := []string{}
	for _, e := range got.Status.Inventory.Entries {
		ids = append(ids, inventory.IDOf(e).String())
	}
	g.Expect(ids).To(Equal([]string{"Deployment/" + ns + "/web"}), "what is applied so far")

	markDeploymentAvailable(t, ctx, ns, "web")
	done := waitReady(t, ks, "main@sha1:p1")
	g.Expect(done.Status.Inventory.Entries).To(HaveLen(2))
	g.Expect(conditions.GetMessage(done, meta.ReadyCondition)).To(Equal("Applied revision: main@sha1:p1"))
	g.Expect(conditions.Get(done, meta.ReconcilingCondition)).To(BeNil())
}

// A run that lasts by its own work shows that it is in progress before it
// ends: here a health wait (spec.wait) on a Deployment that is not
// available yet, during which status says the new generation is being
// reconciled (the Reconciling mark or the step's progress, held back so
// that a quick run writes only its outcome, then written once the run has
// lasted a second); the outcome replaces it.
func TestALastingRunShowsItIsReconciling(t *testing.T) {
	g := NewWithT(t)
	ctx, ks := newKustomization(t, func(ks *kustomizev1.Kustomization) { ks.Spec.Wait = true })
	key := client.ObjectKeyFromObject(ks)
	render(t, ks, "main@sha1:5104", deployment(ks.Namespace, "slow", 1))

	g.Eventually(func(g Gomega) {
		got := &kustomizev1.Kustomization{}
		g.Expect(env.Client.Get(ctx, key, got)).To(Succeed())
		rc := conditions.Get(got, meta.ReconcilingCondition)
		g.Expect(rc).NotTo(BeNil())
		g.Expect(rc.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(rc.ObservedGeneration).To(Equal(got.Generation))
		ready := conditions.Get(got, meta.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Status).To(Equal(metav1.ConditionUnknown), "nothing is judged yet")
		// The step's progress, or the health wait's once the apply is
		// done: either says what the run is at.
		g.Expect(ready.Reason).To(Equal(meta.ProgressingReason))
		g.Expect(ready.Message).To(Or(
			HavePrefix("running Sync phase, wave 0 (1 of 1) of revision main@sha1:5104"),
			HavePrefix("applied revision main@sha1:5104: 1 of 1 objects; waiting for 1 object to be healthy")))
	}, 30*time.Second, 50*time.Millisecond).Should(Succeed())

	markDeploymentAvailable(t, ctx, ks.Namespace, "slow")
	done := waitReady(t, ks, "main@sha1:5104")
	g.Expect(conditions.Get(done, meta.ReconcilingCondition)).To(BeNil())
	g.Expect(done.Status.Inventory.Entries).To(HaveLen(1))
}

// A run that cannot last by its own work — one wave of a few objects,
// nothing to wait for — writes only its outcome however long it takes:
// while its rendered artifact's download hangs for well over a second
// (as a run of a fleet waits on a slow API server), the status keeps
// what the last run wrote, and no Reconciling mark or progress of the new
// generation is written before the outcome (docs/design/anatomy-of-a-controller.md).
func TestAQuickRunThatLastsWritesOnlyItsOutcome(t *testing.T) {
	g := NewWithT(t)
	ctx, ks := newKustomization(t, func(ks *kustomizev1.Kustomization) { ks.Spec.Suspend = true })
	key := client.ObjectKeyFromObject(ks)
	g.Eventually(func(g Gomega) {
		got := &kustomizev1.Kustomization{}
		g.Expect(env.Client.Get(ctx, key, got)).To(Succeed())
		g.Expect(got.Finalizers).To(ContainElement(Finalizer))
	}, 30*time.Second, 50*time.Millisecond).Should(Succeed())
	manifests := configMaps(ks.Namespace, "slow")
	release := artifacts.hold(t, artifactPath(ks, manifests))
	// Rendered for the generation that resuming brings.
	renderAhead(t, ks, "main@sha1:5105", manifests, []byte(manifests), 1)
	setSuspend(t, ks, false)
	g.Eventually(func() int { return artifacts.downloads(artifactPath(ks, manifests)) }, 30*time.Second, 20*time.Millisecond).Should(BeNumerically(">", 0), "the run is downloading")

	g.Consistently(func(g Gomega) {
		got := &kustomizev1.Kustomization{}
		g.Expect(env.Client.Get(ctx, key, got)).To(Succeed())
		rc := conditions.Get(got, meta.ReconcilingCondition)
		g.Expect(rc == nil || rc.ObservedGeneration != got.Generation).To(BeTrue(), "no Reconciling mark of generation %d: %+v", got.Generation, rc)
		g.Expect(got.Status.Sync).To(BeNil(), "no step recorded")
	}, 3*progressEvery, 100*time.Millisecond).Should(Succeed())

	release()
	done := waitReady(t, ks, "main@sha1:5105")
	g.Expect(conditions.Get(done, meta.ReconcilingCondition)).To(BeNil())
	g.Expect(done.Status.Inventory.Entries).To(HaveLen(1))
}
