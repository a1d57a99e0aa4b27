package controller

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	helmv2 "plumb.dev/api/helm/v2"
	"plumb.dev/api/meta"
	"plumb.dev/pkg/helmrender"
	"plumb.dev/pkg/testhelm"
)

// hooksChart has one ConfigMap and a hook for the install and another for
// the upgrade, so that what ran says which of the two a release was.
func hooksChart(version string) testhelm.Chart {
	hook := func(name, on string) string {
		return `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-` + name + `
  annotations:
    helm.sh/hook: ` + on + `
data:
  revision: {{ .Release.Revision | quote }}
`
	}
	return testhelm.Chart{Name: "hooks", Version: version, Files: testhelm.Files{
		"values.yaml": "greeting: hello\n",
		"templates/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-cm
data:
  greeting: {{ .Values.greeting | quote }}
`,
		"templates/pre-install.yaml": hook("pre-install", "pre-install"),
		"templates/pre-upgrade.yaml": hook("pre-upgrade", "pre-upgrade"),
	}}
}

// A release the helm CLI installed, met by a HelmRelease whose first
// render is an install's (render-controller cannot know of the release):
// sync-controller adopts it into status.history and applies nothing, then
// releases the upgrade render as revision 2 with the upgrade's hook, not
// the install's — as `helm upgrade` would.
func TestAnAdoptedReleaseIsUpgradedNotInstalledAgain(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ns, err := env.Namespace(ctx, "adopt-upgrade")
	g.Expect(err).NotTo(HaveOccurred())
	run := helmIn(ctx, t, ns)
	dir := t.TempDir()
	tgz, err := testhelm.Package(hooksChart("1.0.0"))
	g.Expect(err).NotTo(HaveOccurred())
	chartFile := filepath.Join(dir, "hooks-1.0.0.tgz")
	g.Expect(os.WriteFile(chartFile, tgz, 0o600)).To(Succeed())
	run("install", "app", chartFile, "--set", "greeting=hi")
	cm := func(name string) (*corev1.ConfigMap, error) {
		c := &corev1.ConfigMap{}
		return c, env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, c)
	}
	before, err := cm("app-cm")
	g.Expect(err).NotTo(HaveOccurred())
	// The install hook ran under helm; gone now, it shows whether Plumb
	// runs it again.
	preInstall, err := cm("app-pre-install")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(env.Client.Delete(ctx, preInstall)).To(Succeed())

	hr := &helmv2.HelmRelease{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns},
		Spec: helmv2.HelmReleaseSpec{
			ChartRef: &helmv2.CrossNamespaceSourceReference{Kind: "HelmChart", Name: "app"},
			Interval: metav1.Duration{Duration: time.Hour},
			Timeout:  &metav1.Duration{Duration: time.Minute},
		},
	}
	events := subscribeKind(t, helmv2.HelmReleaseKind, ns, "app")
	g.Expect(env.Client.Create(ctx, hr)).To(Succeed())
	values := map[string]any{"greeting": "ho"}
	renderChartAs(t, hr, hooksChart("2.0.0"), helmrender.Options{Values: values, IsInstall: true},
		map[string]string{helmv2.ArtifactReleaseActionKey: helmv2.ReleaseActionInstall})

	// Adopted: revision 1 of Helm's in the history, nothing applied.
	var adopted *helmv2.HelmRelease
	g.Eventually(func(g Gomega) {
		adopted = getRelease(g, hr)
		g.Expect(adopted.Status.History).To(HaveLen(1))
		ready := conditions.Get(adopted, meta.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Reason).To(Equal(helmv2.AdoptedReason))
	}, time.Minute, 100*time.Millisecond).Should(Succeed())
	g.Expect(conditions.Get(adopted, meta.ReadyCondition).Status).To(Equal(metav1.ConditionUnknown))
	h := adopted.Status.History[0]
	g.Expect(h.Version).To(Equal(1))
	g.Expect(h.Status).To(Equal(helmv2.ReleaseStatusDeployed))
	g.Expect([]string{h.ChartName, h.ChartVersion, h.Digest}).To(Equal([]string{"hooks", "1.0.0", ""}))
	g.Expect(h.ConfigDigest).To(Equal(helmv2.ConfigDigest(map[string]any{"greeting": "hi"})), "the digest render-controller gives the same values")
	g.Expect(h.Description).To(Equal("Install complete"))
	g.Expect(events.withReason(helmv2.AdoptedReason)).To(ContainElement(HaveField("Message", ContainSubstring("revision 2, is an upgrade"))))
	g.Consistently(func(g Gomega) {
		now, err := cm("app-cm")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(now.Data).To(HaveKeyWithValue("greeting", "hi"), "the install render is not applied")
		_, err = cm("app-pre-upgrade")
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "no hook ran: %v", err)
	}, 2*time.Second, 200*time.Millisecond).Should(Succeed())

	// render-controller's upgrade render: released as revision 2, the
	// upgrade's hook ran, the install's did not.
	renderChartAs(t, hr, hooksChart("2.0.0"), helmrender.Options{Values: values, Revision: 2},
		map[string]string{helmv2.ArtifactReleaseActionKey: helmv2.ReleaseActionUpgrade})
	got := waitReleaseReady(t, hr, "2.0.0")
	g.Expect(got.Status.History).To(HaveLen(2))
	g.Expect(got.Status.History[0].Version).To(Equal(2))
	g.Expect(got.Status.History[1].Status).To(Equal(helmv2.ReleaseStatusSuperseded))
	g.Expect(got.Status.LastAttemptedReleaseAction).To(Equal(helmv2.ReleaseActionUpgrade))
	after, err := cm("app-cm")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(after.UID).To(Equal(before.UID), "taken over in place")
	g.Expect(after.Data).To(HaveKeyWithValue("greeting", "ho"))
	upgradeHook, err := cm("app-pre-upgrade")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(upgradeHook.Data).To(HaveKeyWithValue("revision", "2"))
	_, err = cm("app-pre-install")
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the install hook did not run again: %v", err)

	var history []struct {
		Revision    int    `json:"revision"`
		Status      string `json:"status"`
		Description string `json:"description"`
	}
	g.Expect(json.Unmarshal([]byte(run("history", "app", "-o", "json")), &history)).To(Succeed())
	g.Expect(history).To(HaveLen(2))
	g.Expect(history[1].Revision).To(Equal(2))
	g.Expect(history[1].Status).To(Equal("deployed"))
	g.Expect(history[1].Description).To(Equal("Upgrade complete"))
}

// The upgrade render of an adopted release often holds the same manifests
// as the install render before it (no template reads .Release.IsInstall
// or .Release.Revision): only its release-action differs, and that alone
// wakes the waiting sync, which releases it.
func TestAnAdoptedReleaseWakesOnAnUpgradeRenderOfTheSameDigest(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ns, err := env.Namespace(ctx, "adopt-same")
	g.Expect(err).NotTo(HaveOccurred())
	tgz, err := testhelm.Package(storageChart("1.0.0"))
	g.Expect(err).NotTo(HaveOccurred())
	chartFile := filepath.Join(t.TempDir(), "demo-1.0.0.tgz")
	g.Expect(os.WriteFile(chartFile, tgz, 0o600)).To(Succeed())
	helmIn(ctx, t, ns)("install", "app", chartFile)

	hr := &helmv2.HelmRelease{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns},
		Spec: helmv2.HelmReleaseSpec{
			ChartRef: &helmv2.CrossNamespaceSourceReference{Kind: "HelmChart", Name: "app"},
			Interval: metav1.Duration{Duration: time.Hour},
			Timeout:  &metav1.Duration{Duration: time.Minute},
		},
	}
	g.Expect(env.Client.Create(ctx, hr)).To(Succeed())
	values := map[string]any{"greeting": "ho"}
	renderChartAs(t, hr, storageChart("2.0.0"), helmrender.Options{Values: values, IsInstall: true},
		map[string]string{helmv2.ArtifactReleaseActionKey: helmv2.ReleaseActionInstall})
	var adopted *helmv2.HelmRelease
	g.Eventually(func(g Gomega) {
		adopted = getRelease(g, hr)
		g.Expect(adopted.Status.History).To(HaveLen(1))
		g.Expect(conditions.GetReason(adopted, meta.ReadyCondition)).To(Equal(helmv2.AdoptedReason))
	}, time.Minute, 100*time.Millisecond).Should(Succeed())

	renderChartAs(t, hr, storageChart("2.0.0"), helmrender.Options{Values: values, Revision: 2},
		map[string]string{helmv2.ArtifactReleaseActionKey: helmv2.ReleaseActionUpgrade})
	got := waitReleaseReady(t, hr, "2.0.0")
	g.Expect(got.Status.RenderedArtifact.Digest).To(Equal(adopted.Status.RenderedArtifact.Digest), "the same manifests")
	g.Expect(got.Status.History).To(HaveLen(2))
	g.Expect(got.Status.History[0].Version).To(Equal(2))
	live := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "app-cm"}, live)).To(Succeed())
	g.Expect(live.Data).To(HaveKeyWithValue("greeting", "ho"))
}
