package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	"helm.sh/helm/v4/pkg/release/common"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	"plumb.dev/sync-controller/internal/helmstorage"
)

// settings is a ConfigMap "settings" whose value changes from commit to
// commit, and the ConfigMaps named after it.
func settings(ns, value string, names ...string) string {
	out := fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: %s\ndata:\n  value: %s\n", ns, value)
	if len(names) > 0 {
		out += "---\n" + configMaps(ns, names...)
	}
	return out
}

// renderKept is render, with the file also where render-controller keeps
// the renders of status.history: beside the newest, named by the whole
// digest, where a rollback downloads it.
func renderKept(t *testing.T, ks *kustomizev1.Kustomization, revision, manifests string) string {
	t.Helper()
	render(t, ks, revision, manifests)
	sum := sha256.Sum256([]byte(manifests))
	artifacts.mu.Lock()
	artifacts.files[fmt.Sprintf("/kustomization/%s/%s/%s.yaml", ks.Namespace, ks.Name, hex.EncodeToString(sum[:]))] = []byte(manifests)
	artifacts.mu.Unlock()
	return "sha256:" + hex.EncodeToString(sum[:])
}

func settingsValue(ctx context.Context, g Gomega, ns string) string {
	cm := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "settings"}, cm)).To(Succeed())
	return cm.Data["value"]
}

func waitSettings(ctx context.Context, g *WithT, ns, value string) {
	g.Eventually(func(g Gomega) string { return settingsValue(ctx, g, ns) }, 30*time.Second, 50*time.Millisecond).Should(Equal(value))
}

func rolledBack(g Gomega, ks *kustomizev1.Kustomization) *metav1.Condition {
	got := &kustomizev1.Kustomization{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(ks), got)).To(Succeed())
	return conditions.Get(got, kustomizev1.RolledBackCondition)
}

// Two commits applied; a rollback to the first brings its ConfigMap value
// back and prunes what the second added, says so in RolledBack and Ready,
// and holds it: a foreign edit is reverted to the rolled-back value, and a
// third commit is rendered but not applied until the annotation goes.
func TestRollbackReappliesAnEarlierRenderAndHoldsIt(t *testing.T) {
	g := NewWithT(t)
	ctx, ks := newKustomization(t, nil)
	ns := ks.Namespace
	first := renderKept(t, ks, "main@sha1:r001", settings(ns, "one", "a"))
	waitReady(t, ks, "main@sha1:r001")
	renderKept(t, ks, "main@sha1:r002", settings(ns, "two", "a", "added"))
	got := waitReady(t, ks, "main@sha1:r002")
	objectsExist(ctx, g, ns, "a", "added")
	g.Expect(got.Status.History).To(HaveLen(2))
	g.Expect(got.Status.History[1].Digest).To(Equal(first), "history entry 1 is the commit before the current one")

	events := subscribeEvents(t, ks)
	patchKustomization(t, ks, func(k *kustomizev1.Kustomization) {
		k.Annotations = map[string]string{kustomizev1.RollbackAnnotation: first}
	})
	waitSettings(ctx, g, ns, "one")
	waitGone(ctx, g, ns, "added")
	got = waitReady(t, ks, "main@sha1:r001")
	ready := conditions.Get(got, meta.ReadyCondition)
	g.Expect(ready.Message).To(ContainSubstring("Applied revision: main@sha1:r001; rolled back to revision main@sha1:r001"))
	rb := conditions.Get(got, kustomizev1.RolledBackCondition)
	g.Expect(rb).NotTo(BeNil())
	g.Expect(rb.Status).To(Equal(metav1.ConditionTrue))
	g.Expect(rb.Reason).To(Equal(kustomizev1.RolledBackReason))
	g.Expect(rb.Message).To(ContainSubstring("revision main@sha1:r002 is rendered but not applied until plumb resume kustomization app"))
	g.Expect(got.Status.History[0].Digest).To(Equal(first))
	g.Expect(got.Status.Inventory.Entries).To(HaveLen(2))
	g.Eventually(func() int { return len(events.withReason(kustomizev1.RolledBackReason)) }, 30*time.Second, 50*time.Millisecond).Should(Equal(1))

	// Drift correction keeps the rolled-back state.
	cm := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "settings"}, cm)).To(Succeed())
	cm.Data["value"] = "foreign"
	g.Expect(env.Client.Update(ctx, cm, client.FieldOwner("someone"))).To(Succeed())
	waitSettings(ctx, g, ns, "one")

	// A third commit is rendered, not applied.
	renderKept(t, ks, "main@sha1:r003", settings(ns, "three", "a", "third"))
	g.Eventually(func(g Gomega) {
		c := rolledBack(g, ks)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Message).To(ContainSubstring("revision main@sha1:r003 is rendered but not applied"))
	}, 30*time.Second, 50*time.Millisecond).Should(Succeed())
	requestReconcile(t, ks)
	g.Expect(settingsValue(ctx, g, ns)).To(Equal("one"))
	err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "third"}, &corev1.ConfigMap{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the held commit's object is not applied: %v", err)
	g.Expect(waitReady(t, ks, "main@sha1:r001")).NotTo(BeNil())

	// Resume: the annotation goes, the newest commit is synced.
	patchKustomization(t, ks, func(k *kustomizev1.Kustomization) { delete(k.Annotations, kustomizev1.RollbackAnnotation) })
	got = waitReady(t, ks, "main@sha1:r003")
	waitSettings(ctx, g, ns, "three")
	objectsExist(ctx, g, ns, "a", "third")
	g.Expect(conditions.Get(got, kustomizev1.RolledBackCondition)).To(BeNil())
	g.Expect(conditions.Get(got, meta.ReadyCondition).Message).To(Equal("Applied revision: main@sha1:r003"))
	g.Eventually(func() int { return len(events.withReason(kustomizev1.RollbackEndedReason)) }, 30*time.Second, 50*time.Millisecond).Should(Equal(1))
}

// With follow-git, the hold ends at the next new render: it is synced,
// and sync-controller removes the rollback's annotations.
func TestRollbackFollowingGitEndsAtTheNextCommit(t *testing.T) {
	g := NewWithT(t)
	ctx, ks := newKustomization(t, nil)
	ns := ks.Namespace
	first := renderKept(t, ks, "main@sha1:f001", settings(ns, "one"))
	waitReady(t, ks, "main@sha1:f001")
	second := renderKept(t, ks, "main@sha1:f002", settings(ns, "two"))
	waitReady(t, ks, "main@sha1:f002")

	patchKustomization(t, ks, func(k *kustomizev1.Kustomization) {
		k.Annotations = map[string]string{kustomizev1.RollbackAnnotation: first, kustomizev1.RollbackFollowGitAnnotation: second}
	})
	waitSettings(ctx, g, ns, "one")
	g.Eventually(func(g Gomega) {
		c := rolledBack(g, ks)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Message).To(ContainSubstring("until the next new revision (follow-git)"))
	}, 30*time.Second, 50*time.Millisecond).Should(Succeed())

	renderKept(t, ks, "main@sha1:f003", settings(ns, "three"))
	got := waitReady(t, ks, "main@sha1:f003")
	waitSettings(ctx, g, ns, "three")
	g.Expect(conditions.Get(got, kustomizev1.RolledBackCondition)).To(BeNil())
	g.Eventually(func(g Gomega) map[string]string {
		k := &kustomizev1.Kustomization{}
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(ks), k)).To(Succeed())
		return k.Annotations
	}, 30*time.Second, 50*time.Millisecond).ShouldNot(Or(
		HaveKey(kustomizev1.RollbackAnnotation), HaveKey(kustomizev1.RollbackFollowGitAnnotation)))
}

// A digest the history does not have applies nothing: Ready=False
// RollbackUnavailable, the applied revision kept.
func TestRollbackToARenderNotInTheHistoryAppliesNothing(t *testing.T) {
	g := NewWithT(t)
	ctx, ks := newKustomization(t, nil)
	ns := ks.Namespace
	renderKept(t, ks, "main@sha1:u001", settings(ns, "one"))
	waitReady(t, ks, "main@sha1:u001")
	patchKustomization(t, ks, func(k *kustomizev1.Kustomization) {
		k.Annotations = map[string]string{kustomizev1.RollbackAnnotation: "sha256:" + fmt.Sprintf("%064d", 7)}
	})
	msg := waitNotReady(t, ks, kustomizev1.RollbackUnavailableReason)
	g.Expect(msg).To(ContainSubstring("which status.history does not have"))
	g.Expect(settingsValue(ctx, g, ns)).To(Equal("one"))
	got := &kustomizev1.Kustomization{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(ks), got)).To(Succeed())
	g.Expect(got.Status.LastAppliedRevision).To(Equal("main@sha1:u001"))
}

// A HelmRelease's rollback is a release, as `helm rollback` makes one:
// the first release's render applied again (its ConfigMap value back,
// what the upgrade added pruned) and recorded as a new deployed release
// "Rollback to 1", without Remediated; a new chart version is held until
// the annotation goes.
func TestHelmReleaseRollbackIsARollbackReleaseAndHolds(t *testing.T) {
	g := NewWithT(t)
	ctx, hr := newHelmRelease(t, nil)
	ns := hr.Namespace
	renderRelease(t, hr, "1.0.0", "v: one", settings(ns, "one", "a"))
	v1 := waitReleaseReady(t, hr, "1.0.0").Status.RenderedArtifact.Digest
	renderRelease(t, hr, "2.0.0", "v: two", settings(ns, "two", "a", "added"))
	got := waitReleaseReady(t, hr, "2.0.0")
	g.Expect(releases(got)).To(Equal([]string{"2:2.0.0:deployed", "1:1.0.0:superseded"}))
	objectsExist(ctx, g, ns, "added")

	patch := client.MergeFrom(got.DeepCopy())
	got.Annotations = map[string]string{kustomizev1.RollbackAnnotation: v1}
	g.Expect(env.Client.Patch(ctx, got, patch)).To(Succeed())
	waitSettings(ctx, g, ns, "one")
	waitGone(ctx, g, ns, "added")
	got = waitReleaseReady(t, hr, "1.0.0")
	g.Expect(releases(got)).To(Equal([]string{"3:1.0.0:deployed", "2:2.0.0:superseded", "1:1.0.0:superseded"}))
	g.Expect(got.Status.History[0].Description).To(Equal("Rollback to 1"))
	g.Expect(got.Status.History[0].Digest).To(Equal(v1))
	g.Expect(conditions.Get(got, helmv2.RemediatedCondition)).To(BeNil())
	g.Expect(conditions.Get(got, kustomizev1.RolledBackCondition)).To(HaveField("Message",
		ContainSubstring("rolled back to revision 1.0.0")))
	g.Expect(conditions.Get(got, meta.ReadyCondition).Message).To(ContainSubstring("Released app@1.0.0 as " + ns + "/app v3; rolled back to revision 1.0.0"))

	// A new chart version is rendered, not released.
	renderRelease(t, hr, "3.0.0", "v: three", settings(ns, "three", "a"))
	g.Eventually(func(g Gomega) {
		c := conditions.Get(getRelease(g, hr), kustomizev1.RolledBackCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Message).To(ContainSubstring("revision 3.0.0 is rendered but not applied until plumb resume helmrelease app"))
	}, 30*time.Second, 50*time.Millisecond).Should(Succeed())
	requestRelease(t, hr)
	g.Expect(settingsValue(ctx, g, ns)).To(Equal("one"))
	g.Expect(releases(getRelease(g, hr))).To(HaveLen(3))
	// While it holds 3.0.0, the rolled-back release is still corrected,
	// and nothing more is released.
	setValue(t, ctx, ns, "settings", "edited")
	waitSettings(ctx, g, ns, "one")
	g.Expect(releases(getRelease(g, hr))).To(HaveLen(3))

	got = getRelease(g, hr)
	patch = client.MergeFrom(got.DeepCopy())
	delete(got.Annotations, kustomizev1.RollbackAnnotation)
	g.Expect(env.Client.Patch(ctx, got, patch)).To(Succeed())
	got = waitReleaseReady(t, hr, "3.0.0")
	waitSettings(ctx, g, ns, "three")
	g.Expect(releases(got)[0]).To(Equal("4:3.0.0:deployed"))
	g.Expect(conditions.Get(got, kustomizev1.RolledBackCondition)).To(BeNil())
}

// A person's rollback is written into Helm's storage as `helm rollback`
// writes it: a new deployed revision, a copy of the target's record,
// "Rollback to 1", the releases before it superseded.
func TestHelmReleaseRollbackIsRecordedInHelmsStorage(t *testing.T) {
	g := NewWithT(t)
	ctx, hr := newHelmRelease(t, nil)
	store := helmstorage.Storage{Client: env.Client, Namespace: hr.Namespace, Release: "app"}
	renderChart(t, hr, storageChart("1.0.0"), map[string]any{"greeting": "hi"})
	v1 := waitReleaseReady(t, hr, "1.0.0").Status.RenderedArtifact.Digest
	renderChart(t, hr, storageChart("2.0.0"), map[string]any{"greeting": "ho"})
	got := waitReleaseReady(t, hr, "2.0.0")

	patch := client.MergeFrom(got.DeepCopy())
	got.Annotations = map[string]string{kustomizev1.RollbackAnnotation: v1}
	g.Expect(env.Client.Patch(ctx, got, patch)).To(Succeed())
	waitReleaseReady(t, hr, "1.0.0")
	g.Eventually(func(g Gomega) {
		g.Expect(records(g, hr.Namespace, "app")).To(Equal([]helmstorage.Entry{
			{Version: 1, Status: common.StatusSuperseded}, {Version: 2, Status: common.StatusSuperseded}, {Version: 3, Status: common.StatusDeployed},
		}))
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	rel, err := store.Read(ctx, 3)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rel.Info.Description).To(Equal("Rollback to 1"))
	g.Expect(rel.Config).To(Equal(map[string]any{"greeting": "hi"}))
}
