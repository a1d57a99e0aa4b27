package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	. "github.com/onsi/gomega/gstruct"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
)

// testClock is the time sync windows are evaluated at in these tests: the
// wall clock unless a test sets it.
type testClock struct {
	mu sync.Mutex
	at time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.at.IsZero() {
		return time.Now()
	}
	return c.at
}

// Set makes the clock read at until the test ends (or the next Set).
func (c *testClock) Set(t *testing.T, at string) {
	parsed, err := time.Parse(time.RFC3339, at)
	if err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	c.at = parsed
	c.mu.Unlock()
	t.Cleanup(func() {
		c.mu.Lock()
		c.at = time.Time{}
		c.mu.Unlock()
	})
}

var windowClock = &testClock{}

// nightly is a deny window from 09:00 to 11:00 UTC every day.
func nightly(mutate ...func(*kustomizev1.SyncWindow)) kustomizev1.SyncWindow {
	w := kustomizev1.SyncWindow{Kind: kustomizev1.SyncWindowDeny, Schedule: "0 9 * * *", Duration: metav1.Duration{Duration: 2 * time.Hour}}
	for _, m := range mutate {
		m(&w)
	}
	return w
}

// renderAndKeep renders manifests and also serves them where
// render-controller keeps a render by its whole digest, as the held-back
// render is fetched from there.
func renderAndKeep(t *testing.T, ks *kustomizev1.Kustomization, revision, manifests string) {
	t.Helper()
	render(t, ks, revision, manifests)
	sum := sha256.Sum256([]byte(manifests))
	artifacts.mu.Lock()
	artifacts.files["/kustomization/"+ks.Namespace+"/"+ks.Name+"/"+hex.EncodeToString(sum[:])+".yaml"] = []byte(manifests)
	artifacts.mu.Unlock()
}

func configMapValue(ns, name, value string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n  namespace: " + ns + "\ndata:\n  value: " + value + "\n"
}

func valueOf(ctx context.Context, g Gomega, ns, name string) string {
	cm := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cm)).To(Succeed())
	return cm.Data["value"]
}

func setValue(t *testing.T, ctx context.Context, ns, name, value string) {
	t.Helper()
	cm := &corev1.ConfigMap{}
	NewWithT(t).Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cm)).To(Succeed())
	patch := client.MergeFrom(cm.DeepCopy())
	cm.Data["value"] = value
	NewWithT(t).Expect(env.Client.Patch(ctx, cm, patch, client.FieldOwner("kubectl-edit"))).To(Succeed())
}

// heldStatus waits for Ready=False OutsideSyncWindow and returns the
// Kustomization.
func heldStatus(t *testing.T, ks *kustomizev1.Kustomization) *kustomizev1.Kustomization {
	t.Helper()
	waitNotReady(t, ks, kustomizev1.OutsideSyncWindowReason)
	got := &kustomizev1.Kustomization{}
	NewWithT(t).Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(ks), got)).To(Succeed())
	return got
}

// A new commit during a deny window is rendered and held: the cluster keeps
// the revision applied before, a foreign edit is still reverted to it, the
// status says which window holds what until when, and once the window has
// ended the new revision is applied.
func TestADenyWindowHoldsANewRevisionUntilItEnds(t *testing.T) {
	g := NewWithT(t)
	windowClock.Set(t, "2026-12-07T08:00:00Z")
	ctx, ks := newKustomization(t, func(ks *kustomizev1.Kustomization) {
		ks.Spec.SyncWindows = []kustomizev1.SyncWindow{nightly()}
	})
	renderAndKeep(t, ks, "main@sha1:1111", configMapValue(ks.Namespace, "settings", "one"))
	waitReady(t, ks, "main@sha1:1111")

	windowClock.Set(t, "2026-12-07T09:30:00Z")
	renderAndKeep(t, ks, "main@sha1:2222", configMapValue(ks.Namespace, "settings", "two"))
	got := heldStatus(t, ks)
	ready := conditions.Get(got, meta.ReadyCondition)
	g.Expect(ready.Message).To(Equal("revision main@sha1:2222 is held by sync window spec.syncWindows[0] until 2026-12-07T11:00:00Z; " +
		"drift from revision main@sha1:1111 is still corrected"))
	g.Expect(conditions.IsTrue(got, meta.ReconcilingCondition)).To(BeTrue())
	g.Expect(got.Status.SyncWindow).To(PointTo(MatchAllFields(Fields{
		"HeldRevision":    Equal("main@sha1:2222"),
		"NextOpen":        PointTo(HaveField("Time", BeTemporally("==", time.Date(2026, 12, 7, 11, 0, 0, 0, time.UTC)))),
		"Windows":         Equal([]string{"spec.syncWindows[0]"}),
		"DriftCorrection": BeTrue(),
	})))
	g.Expect(got.Status.LastAppliedRevision).To(Equal("main@sha1:1111"))
	g.Expect(valueOf(ctx, g, ks.Namespace, "settings")).To(Equal("one"))

	// Drift is corrected to the revision applied, not the held one.
	setValue(t, ctx, ks.Namespace, "settings", "edited")
	g.Eventually(func(g Gomega) string { return valueOf(ctx, g, ks.Namespace, "settings") }, 30*time.Second, 50*time.Millisecond).Should(Equal("one"))

	// The window ends: the held revision goes in.
	windowClock.Set(t, "2026-12-07T11:00:01Z")
	requestReconcile(t, ks)
	got = waitReady(t, ks, "main@sha1:2222")
	g.Expect(valueOf(ctx, g, ks.Namespace, "settings")).To(Equal("two"))
	g.Expect(got.Status.SyncWindow).To(BeNil())
}

// A window that says driftCorrection: false leaves a foreign edit in place
// while it is active, and reports it; the same edit is reverted once the
// window is over.
func TestAWindowWithoutDriftCorrectionOnlyReportsDrift(t *testing.T) {
	g := NewWithT(t)
	windowClock.Set(t, "2026-12-07T08:00:00Z")
	ctx, ks := newKustomization(t, func(ks *kustomizev1.Kustomization) {
		ks.Spec.SyncWindows = []kustomizev1.SyncWindow{nightly(func(w *kustomizev1.SyncWindow) { w.DriftCorrection = ptr.To(false) })}
	})
	renderAndKeep(t, ks, "main@sha1:1111", configMapValue(ks.Namespace, "settings", "one"))
	waitReady(t, ks, "main@sha1:1111")

	windowClock.Set(t, "2026-12-07T10:00:00Z")
	setValue(t, ctx, ks.Namespace, "settings", "edited")
	g.Eventually(func(g Gomega) {
		got := &kustomizev1.Kustomization{}
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(ks), got)).To(Succeed())
		drifted := conditions.Get(got, kustomizev1.DriftedCondition)
		g.Expect(drifted).NotTo(BeNil())
		g.Expect(drifted.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(drifted.Message).To(ContainSubstring("ConfigMap/" + ks.Namespace + "/settings:data.value"))
		g.Expect(got.Status.SyncWindow).NotTo(BeNil())
		g.Expect(got.Status.SyncWindow.DriftCorrection).To(BeFalse())
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	g.Expect(valueOf(ctx, g, ks.Namespace, "settings")).To(Equal("edited"), "drift is only reported while the window is active")

	windowClock.Set(t, "2026-12-07T11:30:00Z")
	requestReconcile(t, ks)
	g.Eventually(func(g Gomega) string { return valueOf(ctx, g, ks.Namespace, "settings") }, 30*time.Second, 50*time.Millisecond).Should(Equal("one"))
}

// A SyncWindowPolicy holds the Kustomizations its selector matches in its
// namespace, and only those; deleting it releases them.
func TestASyncWindowPolicySelectsByLabel(t *testing.T) {
	g := NewWithT(t)
	windowClock.Set(t, "2026-12-07T08:00:00Z")
	ctx, selected := newKustomization(t, func(ks *kustomizev1.Kustomization) { ks.Labels = map[string]string{"tier": "prod"} })
	other := &kustomizev1.Kustomization{
		ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: selected.Namespace, Labels: map[string]string{"tier": "dev"}},
		Spec:       *selected.Spec.DeepCopy(),
	}
	g.Expect(env.Client.Create(ctx, other)).To(Succeed())
	renderAndKeep(t, selected, "main@sha1:1111", configMapValue(selected.Namespace, "selected", "one"))
	renderAndKeep(t, other, "main@sha1:1111", configMapValue(selected.Namespace, "other", "one"))
	waitReady(t, selected, "main@sha1:1111")
	waitReady(t, other, "main@sha1:1111")

	policy := &kustomizev1.SyncWindowPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "freeze", Namespace: selected.Namespace},
		Spec: kustomizev1.SyncWindowPolicySpec{
			Selector: metav1.LabelSelector{MatchLabels: map[string]string{"tier": "prod"}},
			Windows:  []kustomizev1.SyncWindow{nightly(func(w *kustomizev1.SyncWindow) { w.ManualSync = true })},
		},
	}
	g.Expect(env.Client.Create(ctx, policy)).To(Succeed())
	windowClock.Set(t, "2026-12-07T09:30:00Z")
	renderAndKeep(t, selected, "main@sha1:2222", configMapValue(selected.Namespace, "selected", "two"))
	renderAndKeep(t, other, "main@sha1:2222", configMapValue(selected.Namespace, "other", "two"))

	got := heldStatus(t, selected)
	g.Expect(conditions.Get(got, meta.ReadyCondition).Message).To(ContainSubstring("held by sync window SyncWindowPolicy/freeze.spec.windows[0] until 2026-12-07T11:00:00Z"))
	waitReady(t, other, "main@sha1:2222")
	g.Expect(valueOf(ctx, g, selected.Namespace, "other")).To(Equal("two"))
	g.Expect(valueOf(ctx, g, selected.Namespace, "selected")).To(Equal("one"))

	// Deleting the policy wakes what it selected: the held revision goes in.
	g.Expect(env.Client.Delete(ctx, policy)).To(Succeed())
	waitReady(t, selected, "main@sha1:2222")
	g.Expect(valueOf(ctx, g, selected.Namespace, "selected")).To(Equal("two"))
}

// A Kustomization that never synced is not installed during a deny window:
// nothing is applied, and it says so.
func TestAFirstRevisionWaitsForTheWindow(t *testing.T) {
	g := NewWithT(t)
	windowClock.Set(t, "2026-12-07T10:00:00Z")
	ctx, ks := newKustomization(t, func(ks *kustomizev1.Kustomization) {
		ks.Spec.SyncWindows = []kustomizev1.SyncWindow{nightly()}
	})
	renderAndKeep(t, ks, "main@sha1:1111", configMapValue(ks.Namespace, "settings", "one"))
	got := heldStatus(t, ks)
	g.Expect(conditions.Get(got, meta.ReadyCondition).Message).To(Equal(
		"revision main@sha1:1111 is held by sync window spec.syncWindows[0] until 2026-12-07T11:00:00Z; nothing is applied"))
	cms := &corev1.ConfigMapList{}
	g.Expect(env.Client.List(ctx, cms, client.InNamespace(ks.Namespace), client.MatchingLabels{"kustomize.plumb.dev/name": ks.Name})).To(Succeed())
	g.Expect(cms.Items).To(BeEmpty())

	windowClock.Set(t, "2026-12-07T11:00:01Z")
	requestReconcile(t, ks)
	waitReady(t, ks, "main@sha1:1111")
}

// A window the API server accepts but that does not mean anything — a
// time zone that does not exist — stalls the Kustomization with the
// window's name and the field.
func TestAnUnknownTimeZoneStalls(t *testing.T) {
	_, ks := newKustomization(t, func(ks *kustomizev1.Kustomization) {
		ks.Spec.SyncWindows = []kustomizev1.SyncWindow{nightly(func(w *kustomizev1.SyncWindow) { w.TimeZone = "Mars/Olympus" })}
	})
	renderAndKeep(t, ks, "main@sha1:1111", configMapValue(ks.Namespace, "settings", "one"))
	NewWithT(t).Expect(waitNotReady(t, ks, kustomizev1.SyncWindowInvalidReason)).To(Equal(`spec.syncWindows[0]: timeZone "Mars/Olympus" is not an IANA time zone`))
}

// The API server refuses a schedule that is not five fields and a duration
// of zero, with messages that name them.
func TestTheAPIServerRefusesMalformedWindows(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ns, err := env.Namespace(ctx, "sync")
	g.Expect(err).NotTo(HaveOccurred())
	for _, tc := range []struct {
		window kustomizev1.SyncWindow
		want   string
	}{
		{nightly(func(w *kustomizev1.SyncWindow) { w.Schedule = "0 9 * *" }), "spec.syncWindows[0].schedule"},
		{nightly(func(w *kustomizev1.SyncWindow) { w.Duration = metav1.Duration{} }), "duration must be greater than zero"},
		{nightly(func(w *kustomizev1.SyncWindow) { w.Kind = "maybe" }), `spec.syncWindows[0].kind: Unsupported value: "maybe"`},
	} {
		policy := &kustomizev1.SyncWindowPolicy{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "bad-", Namespace: ns},
			Spec:       kustomizev1.SyncWindowPolicySpec{Windows: []kustomizev1.SyncWindow{tc.window}},
		}
		err := env.Client.Create(ctx, policy)
		g.Expect(err).To(HaveOccurred())
		g.Expect(err.Error()).To(ContainSubstring(strings.Replace(tc.want, "spec.syncWindows", "spec.windows", 1)))
		ks := &kustomizev1.Kustomization{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "bad-", Namespace: ns},
			Spec: kustomizev1.KustomizationSpec{
				SourceRef:   kustomizev1.CrossNamespaceSourceReference{Kind: "GitRepository", Name: "repo"},
				Interval:    metav1.Duration{Duration: time.Hour},
				SyncWindows: []kustomizev1.SyncWindow{tc.window},
			},
		}
		err = env.Client.Create(ctx, ks)
		g.Expect(err).To(HaveOccurred())
		g.Expect(err.Error()).To(ContainSubstring(tc.want))
	}
}

// A HelmRelease's upgrade waits for its window: the new chart's render is
// held, nothing of it applied, the release stays at v1, and the upgrade
// is made once the window has ended.
func TestAHelmReleaseUpgradeWaitsForItsWindow(t *testing.T) {
	g := NewWithT(t)
	windowClock.Set(t, "2026-12-07T08:00:00Z")
	ctx, hr := newHelmRelease(t, func(hr *helmv2.HelmRelease) {
		hr.Spec.SyncWindows = []kustomizev1.SyncWindow{nightly()}
	})
	renderRelease(t, hr, "1.0.0", "v: 1", configMapValue(hr.Namespace, "settings", "one"))
	waitReleaseReady(t, hr, "1.0.0")

	windowClock.Set(t, "2026-12-07T10:15:00Z")
	renderRelease(t, hr, "2.0.0", "v: 2", configMapValue(hr.Namespace, "settings", "two"))
	var got *helmv2.HelmRelease
	g.Eventually(func(g Gomega) {
		got = getRelease(g, hr)
		ready := conditions.Get(got, meta.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Reason).To(Equal(kustomizev1.OutsideSyncWindowReason), ready.Message)
	}, time.Minute, 100*time.Millisecond).Should(Succeed())
	g.Expect(conditions.Get(got, meta.ReadyCondition).Message).To(Equal(
		"revision 2.0.0 is held by sync window spec.syncWindows[0] until 2026-12-07T11:00:00Z; drift from revision 1.0.0 is still corrected"))
	g.Expect(got.Status.SyncWindow).NotTo(BeNil())
	g.Expect(got.Status.SyncWindow.HeldRevision).To(Equal("2.0.0"))
	g.Expect(releases(got)).To(Equal([]string{"1:1.0.0:deployed"}))
	g.Expect(valueOf(ctx, g, hr.Namespace, "settings")).To(Equal("one"))

	windowClock.Set(t, "2026-12-07T11:00:01Z")
	requestRelease(t, hr)
	got = waitReleaseReady(t, hr, "2.0.0")
	g.Expect(valueOf(ctx, g, hr.Namespace, "settings")).To(Equal("two"))
	g.Expect(got.Status.SyncWindow).To(BeNil())
}

// A spec change during a deny window (a new generation whose render is
// held like the commit before it) leaves the render synced last applied as
// a drift correction: its PreSync hook, which ran when it was synced, is
// not run again, and no sync is recorded.
func TestASpecChangeInADenyWindowRunsNoHookAgain(t *testing.T) {
	g := NewWithT(t)
	windowClock.Set(t, "2026-12-07T08:00:00Z")
	ctx, ks := newKustomization(t, func(ks *kustomizev1.Kustomization) {
		ks.Spec.SyncWindows = []kustomizev1.SyncWindow{nightly()}
	})
	ns := ks.Namespace
	renderAndKeep(t, ks, "main@sha1:1111", generateNameHook(ns, "migrate-", "")+"---\n"+configMapValue(ns, "settings", "one"))
	var hooks []string
	g.Eventually(func(g Gomega) []string { hooks = hookJobs(ctx, g, ns, "migrate-"); return hooks }, 30*time.Second, 100*time.Millisecond).Should(HaveLen(1))
	finishJob(t, ctx, ns, hooks[0], true)
	synced := waitReady(t, ks, "main@sha1:1111")

	windowClock.Set(t, "2026-12-07T09:30:00Z")
	held := generateNameHook(ns, "migrate-", "") + "---\n" + configMapValue(ns, "settings", "two")
	renderAndKeep(t, ks, "main@sha1:2222", held)
	heldStatus(t, ks)

	// The spec changes; render-controller renders the new generation,
	// the same commit, still held.
	current := &kustomizev1.Kustomization{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(ks), current)).To(Succeed())
	patch := client.MergeFrom(current.DeepCopy())
	current.Spec.Interval = metav1.Duration{Duration: current.Spec.Interval.Duration + time.Minute}
	g.Expect(env.Client.Patch(ctx, current, patch)).To(Succeed())
	renderAndKeep(t, ks, "main@sha1:2222", held)
	g.Eventually(func(g Gomega) {
		got := &kustomizev1.Kustomization{}
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(ks), got)).To(Succeed())
		ready := conditions.Get(got, meta.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.ObservedGeneration).To(Equal(current.Generation))
		g.Expect(ready.Reason).To(Equal(kustomizev1.OutsideSyncWindowReason))
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())

	g.Expect(hookJobs(ctx, g, ns, "migrate-")).To(Equal(hooks), "the synced render's PreSync hook ran once")
	got := &kustomizev1.Kustomization{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(ks), got)).To(Succeed())
	g.Expect(got.Status.History).To(Equal(synced.Status.History), "no sync is recorded while the window holds")
	g.Expect(got.Status.LastAppliedRevision).To(Equal("main@sha1:1111"))
	g.Expect(valueOf(ctx, g, ns, "settings")).To(Equal("one"))
}
