package controller

import (
	"context"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	"helm.sh/helm/v4/pkg/release/common"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	"plumb.dev/pkg/testhelm"
	"plumb.dev/sync-controller/internal/helmstorage"
)

// These tests are what a HelmRelease does while a new render is held
// (docs/api/helmrelease.md, syncWindows and syncPolicy): the deployed
// release's objects are still corrected, or reported, as a Kustomization's
// applied render is, and the held render is not released.

// webChart is a chart with a Deployment whose image tag and replicas are
// values, and a ConfigMap of its greeting.
func webChart(version string) testhelm.Chart {
	return testhelm.Chart{Name: "web", Version: version, Files: testhelm.Files{
		"values.yaml": "replicas: 1\ntag: \"1.0\"\ngreeting: hello\n",
		"templates/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-web
spec:
  replicas: {{ .Values.replicas }}
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: registry.example/web:{{ .Values.tag }}
`,
		"templates/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-greeting
data:
  greeting: {{ .Values.greeting | quote }}
`,
	}}
}

// newWebRelease creates a HelmRelease that does not wait for its
// Deployment (no node runs its Pods here), with mutate applied.
func newWebRelease(t *testing.T, mutate func(*helmv2.HelmRelease)) (context.Context, *helmv2.HelmRelease) {
	return newHelmRelease(t, func(hr *helmv2.HelmRelease) {
		hr.Spec.Install = &helmv2.Install{ActionSwitches: helmv2.ActionSwitches{DisableWait: true}}
		hr.Spec.Upgrade = &helmv2.Upgrade{ActionSwitches: helmv2.ActionSwitches{DisableWait: true}}
		if mutate != nil {
			mutate(hr)
		}
	})
}

// upgradeValues sets spec.values, a new generation, as a person does for
// an upgrade, and renders it as render-controller would: version with
// values.
func upgradeValues(t *testing.T, hr *helmv2.HelmRelease, version string, values map[string]any, raw string) {
	t.Helper()
	g := NewWithT(t)
	got := getRelease(g, hr)
	patch := client.MergeFrom(got.DeepCopy())
	got.Spec.Values = &apiextensionsv1.JSON{Raw: []byte(raw)}
	g.Expect(env.Client.Patch(context.Background(), got, patch)).To(Succeed())
	renderChart(t, hr, webChart(version), values)
}

// webDeployment reads the release's Deployment; an error of the read
// fails.
func webDeployment(ctx context.Context, g Gomega, ns string) *appsv1.Deployment {
	d := &appsv1.Deployment{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app-web"}, d)).To(Succeed())
	return d
}

// editReplicas changes the Deployment's replicas as a person would, with
// kubectl's field manager.
func editReplicas(t *testing.T, ctx context.Context, ns string, replicas int32) {
	t.Helper()
	g := NewWithT(t)
	d := webDeployment(ctx, g, ns)
	patch := client.MergeFrom(d.DeepCopy())
	d.Spec.Replicas = ptr.To(replicas)
	g.Expect(env.Client.Patch(ctx, d, patch, client.FieldOwner("kubectl-edit"))).To(Succeed())
}

// waitDriftReported waits until the HelmRelease reports drift at path
// (Object:field) as driftPolicy Report does — Drifted=True reason
// DriftDetected naming it, status.drift, a DriftDetected event — and
// returns it.
func waitDriftReported(t *testing.T, hr *helmv2.HelmRelease, events *eventSubscription, path string) *helmv2.HelmRelease {
	t.Helper()
	var got *helmv2.HelmRelease
	NewWithT(t).Eventually(func(g Gomega) {
		got = getRelease(g, hr)
		drifted := conditions.Get(got, kustomizev1.DriftedCondition)
		g.Expect(drifted).NotTo(BeNil())
		g.Expect(drifted.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(drifted.Reason).To(Equal(kustomizev1.DriftDetectedReason))
		g.Expect(drifted.Message).To(ContainSubstring(path))
		g.Expect(got.Status.Drift).NotTo(BeNil())
		g.Expect(got.Status.Drift.Paths).To(ContainElement(path))
		g.Expect(events.withReason(kustomizev1.DriftDetectedReason)).NotTo(BeEmpty())
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	return got
}

// A deny window holds new values of a HelmRelease: a hand edit of the
// deployed release's Deployment is reverted to the deployed release —
// not to the held render — by a drift correction that releases nothing:
// status.history, status.sync and Helm's storage stay as they were, and
// the held upgrade goes in once the window has ended.
func TestADenyWindowStillCorrectsTheDeployedHelmRelease(t *testing.T) {
	g := NewWithT(t)
	windowClock.Set(t, "2026-12-07T08:00:00Z")
	ctx, hr := newWebRelease(t, func(hr *helmv2.HelmRelease) {
		hr.Spec.SyncWindows = []kustomizev1.SyncWindow{nightly()}
	})
	ns := hr.Namespace
	renderChart(t, hr, webChart("1.0.0"), nil)
	deployed := waitReleaseReady(t, hr, "1.0.0")
	g.Expect(records(g, ns, "app")).To(Equal([]helmstorage.Entry{{Version: 1, Status: common.StatusDeployed}}))
	g.Expect(deployed.Status.Sync).NotTo(BeNil())

	windowClock.Set(t, "2026-12-07T09:30:00Z")
	events := subscribeKind(t, helmv2.HelmReleaseKind, ns, hr.Name)
	upgradeValues(t, hr, "2.0.0", map[string]any{"replicas": 2, "tag": "2.0"}, `{"replicas":2,"tag":"2.0"}`)
	g.Expect(waitReleaseNotReady(t, hr, kustomizev1.OutsideSyncWindowReason, "")).To(Equal("revision 2.0.0 is held by sync window spec.syncWindows[0] until 2026-12-07T11:00:00Z; " +
		"drift from revision 1.0.0 is still corrected"))

	editReplicas(t, ctx, ns, 5)
	g.Eventually(func(g Gomega) int32 { return *webDeployment(ctx, g, ns).Spec.Replicas }, 30*time.Second, 50*time.Millisecond).
		Should(Equal(int32(1)), "reverted to the deployed release, not the held one")
	g.Eventually(func() []string {
		var changes []string
		for _, e := range events.withReason(kustomizev1.DriftCorrectedReason) {
			for _, c := range e.Changes {
				changes = append(changes, c.Object+":"+c.Path+"="+c.After)
			}
		}
		return changes
	}, 30*time.Second, 100*time.Millisecond).Should(ContainElement("Deployment/" + ns + "/app-web:spec.replicas=1"))
	if corrected := events.withReason(kustomizev1.DriftCorrectedReason); len(corrected) > 0 {
		t.Logf("held release corrected %s after the foreign change was seen", corrected[0].Metadata["latency"])
	}
	g.Expect(webDeployment(ctx, g, ns).Spec.Template.Spec.Containers[0].Image).To(Equal("registry.example/web:1.0"))

	got := getRelease(g, hr)
	g.Expect(conditions.Get(got, meta.ReadyCondition).Reason).To(Equal(kustomizev1.OutsideSyncWindowReason))
	g.Expect(releases(got)).To(Equal([]string{"1:1.0.0:deployed"}))
	g.Expect(got.Status.Sync).To(Equal(deployed.Status.Sync), "no sync operation: no hook ran")
	g.Expect(got.Status.LastAttemptedRevision).To(Equal("1.0.0"))
	g.Expect(got.Status.LastAttemptedConfigDigest).To(Equal(deployed.Status.LastAttemptedConfigDigest))
	g.Expect(records(g, ns, "app")).To(Equal([]helmstorage.Entry{{Version: 1, Status: common.StatusDeployed}}))
	g.Expect(events.withReason(helmv2.UpgradeSucceededReason)).To(BeEmpty())

	// The window ends: the held upgrade is released.
	windowClock.Set(t, "2026-12-07T11:00:01Z")
	requestRelease(t, hr)
	got = waitReleaseReady(t, hr, "2.0.0")
	g.Expect(releases(got)).To(Equal([]string{"2:2.0.0:deployed", "1:1.0.0:superseded"}))
	g.Expect(*webDeployment(ctx, g, ns).Spec.Replicas).To(Equal(int32(2)))
	g.Eventually(func(g Gomega) {
		g.Expect(records(g, ns, "app")).To(Equal([]helmstorage.Entry{
			{Version: 1, Status: common.StatusSuperseded}, {Version: 2, Status: common.StatusDeployed}}))
	}, time.Minute, 100*time.Millisecond).Should(Succeed())
}

// A window with driftCorrection: false reports the drift of the deployed
// release while it holds a new render, as a Kustomization's: Drifted=True
// and a DriftDetected event name the Deployment's field, and the edit
// stays.
func TestADenyWindowWithoutDriftCorrectionReportsTheDeployedHelmReleasesDrift(t *testing.T) {
	g := NewWithT(t)
	windowClock.Set(t, "2026-12-07T08:00:00Z")
	ctx, hr := newWebRelease(t, func(hr *helmv2.HelmRelease) {
		hr.Spec.SyncWindows = []kustomizev1.SyncWindow{nightly(func(w *kustomizev1.SyncWindow) { w.DriftCorrection = ptr.To(false) })}
	})
	ns := hr.Namespace
	renderChart(t, hr, webChart("1.0.0"), nil)
	waitReleaseReady(t, hr, "1.0.0")

	windowClock.Set(t, "2026-12-07T09:30:00Z")
	events := subscribeKind(t, helmv2.HelmReleaseKind, ns, hr.Name)
	upgradeValues(t, hr, "2.0.0", map[string]any{"greeting": "bonjour"}, `{"greeting":"bonjour"}`)
	g.Expect(waitReleaseNotReady(t, hr, kustomizev1.OutsideSyncWindowReason, "")).To(Equal("revision 2.0.0 is held by sync window spec.syncWindows[0] until 2026-12-07T11:00:00Z; " +
		"drift from revision 1.0.0 is reported, not corrected"))

	editReplicas(t, ctx, ns, 5)
	waitDriftReported(t, hr, events, "Deployment/"+ns+"/app-web:spec.replicas")
	g.Expect(*webDeployment(ctx, g, ns).Spec.Replicas).To(Equal(int32(5)), "drift is only reported")
	g.Expect(events.withReason(kustomizev1.DriftCorrectedReason)).To(BeEmpty())
	got := getRelease(g, hr)
	g.Expect(conditions.Get(got, meta.ReadyCondition).Reason).To(Equal(kustomizev1.OutsideSyncWindowReason))
	g.Expect(releases(got)).To(Equal([]string{"1:1.0.0:deployed"}))
	g.Expect(records(g, ns, "app")).To(Equal([]helmstorage.Entry{{Version: 1, Status: common.StatusDeployed}}))
	g.Expect(configMapGreeting(ctx, g, ns)).To(Equal("hello"), "the held render is not applied")
}

// A Manual HelmRelease with a new chart version waiting for a sync
// reports a hand edit of what it deployed — OutOfSync and Drifted with
// reason DriftDetected and a DriftDetected event, as a Manual
// Kustomization — and leaves it; the waiting version is not released.
func TestAManualHelmReleaseReportsDriftWhileANewVersionWaits(t *testing.T) {
	g := NewWithT(t)
	ctx, hr := newWebRelease(t, func(hr *helmv2.HelmRelease) {
		hr.Spec.SyncPolicy = kustomizev1.SyncPolicyManual
	})
	ns := hr.Namespace
	renderChart(t, hr, webChart("1.0.0"), nil)
	waitOutOfSync(t, hr, kustomizev1.ManualSyncPendingReason, "1.0.0")
	requestSync(t, hr, "")
	waitReleaseReady(t, hr, "1.0.0")

	// 2.0.0 changes the greeting only: the Deployment is the same in both.
	events := subscribeKind(t, helmv2.HelmReleaseKind, ns, hr.Name)
	renderChart(t, hr, webChart("2.0.0"), map[string]any{"greeting": "bonjour"})
	out := waitOutOfSync(t, hr, kustomizev1.ManualSyncPendingReason, "2.0.0")
	g.Expect(out.Change).To(Equal([]string{"ConfigMap/" + ns + "/app-greeting"}))

	editReplicas(t, ctx, ns, 5)
	reported := waitDriftReported(t, hr, events, "Deployment/"+ns+"/app-web:spec.replicas")
	g.Expect(reported.Status.OutOfSync).NotTo(BeNil())
	g.Expect(reported.Status.OutOfSync.Change).To(ConsistOf("ConfigMap/"+ns+"/app-greeting", "Deployment/"+ns+"/app-web"))
	g.Expect(*webDeployment(ctx, g, ns).Spec.Replicas).To(Equal(int32(5)), "drift is only reported")
	g.Expect(events.withReason(kustomizev1.DriftCorrectedReason)).To(BeEmpty())
	got := getRelease(g, hr)
	g.Expect(releases(got)).To(Equal([]string{"1:1.0.0:deployed"}))
	g.Expect(got.Status.LastAppliedRevision).To(Equal("1.0.0"))
	g.Expect(records(g, ns, "app")).To(Equal([]helmstorage.Entry{{Version: 1, Status: common.StatusDeployed}}))
	g.Expect(configMapGreeting(ctx, g, ns)).To(Equal("hello"), "2.0.0 waits for a sync")
}

func configMapGreeting(ctx context.Context, g Gomega, ns string) string {
	cm := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app-greeting"}, cm)).To(Succeed())
	return cm.Data["greeting"]
}
