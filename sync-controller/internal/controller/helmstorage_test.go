package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	"helm.sh/helm/v4/pkg/release/common"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/helmrender"
	"plumb.dev/pkg/reconcile"
	"plumb.dev/pkg/testhelm"
	"plumb.dev/sync-controller/internal/engine"
	"plumb.dev/sync-controller/internal/helmstorage"
	"plumb.dev/sync-controller/internal/target"
)

// storageChart is a chart with a ConfigMap of the values, a hook and
// NOTES.txt.
func storageChart(version string) testhelm.Chart {
	return testhelm.Chart{Name: "demo", Version: version, AppVersion: "9.9." + version[:1], Files: testhelm.Files{
		"values.yaml": "greeting: hello\n",
		"templates/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-cm
  labels:
    app.kubernetes.io/managed-by: {{ .Release.Service }}
data:
  greeting: {{ .Values.greeting | quote }}
`,
		"templates/hook.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-hook
  annotations:
    helm.sh/hook: test
data: {}
`,
		"templates/NOTES.txt": "Say {{ .Values.greeting }} to {{ .Release.Name }}.\n",
	}}
}

// renderChart does render-controller's part with the real renderer: it
// renders the chart as a HelmRelease's release (helmrender, Record), serves
// the manifests and the release record, and points
// status.renderedArtifact at them. extra adds to the artifact's metadata
// what render-controller adds for some sources (an OCIRepository's
// oci-digest, and its chart-version, which is then the revision too).
func renderChart(t *testing.T, hr *helmv2.HelmRelease, c testhelm.Chart, values map[string]any, extra ...map[string]string) {
	t.Helper()
	renderChartAs(t, hr, c, helmrender.Options{Values: values}, extra...)
}

// renderChartAs is renderChart with the render's options (install or
// upgrade, revision; the release name and namespace are hr's).
func renderChartAs(t *testing.T, hr *helmv2.HelmRelease, c testhelm.Chart, opts helmrender.Options, extra ...map[string]string) {
	t.Helper()
	g := NewWithT(t)
	tgz, err := testhelm.Package(c)
	g.Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	opts.ReleaseName, opts.Namespace, opts.Record = hr.GetReleaseName(), hr.GetReleaseNamespace(), true
	res, err := helmrender.Render(ctx, tgz, opts)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Record).NotTo(BeNil())
	hex := strings.TrimPrefix(res.Digest, "sha256:")
	path := fmt.Sprintf("/helmrelease/%s/%s/%s.yaml", hr.Namespace, hr.Name, hex)
	recPath := fmt.Sprintf("/helmrelease/%s/%s/%s.release.json.gz", hr.Namespace, hr.Name, hex)
	artifacts.mu.Lock()
	artifacts.files[path] = res.Manifests
	artifacts.files[recPath] = res.Record
	artifacts.mu.Unlock()

	current := &helmv2.HelmRelease{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(hr), current)).To(Succeed())
	md := map[string]any{
		helmv2.ArtifactChartNameKey: res.ChartName, helmv2.ArtifactChartVersionKey: res.ChartVersion,
		helmv2.ArtifactConfigDigestKey:        res.ConfigDigest,
		helmv2.ArtifactReleaseRecordKey:       artifacts.URL + recPath,
		helmv2.ArtifactReleaseRecordDigestKey: recordDigest(res.Record),
	}
	for _, e := range extra {
		for k, v := range e {
			md[k] = v
		}
	}
	status := map[string]any{
		"renderedArtifact": map[string]any{
			"path": path, "url": artifacts.URL + path, "revision": md[helmv2.ArtifactChartVersionKey], "digest": res.Digest,
			"size": int64(len(res.Manifests)), "lastUpdateTime": metav1.Now().UTC().Format(time.RFC3339),
			"metadata": md,
		},
		"conditions": []any{map[string]any{
			"type": kustomizev1.RenderedCondition, "status": "True", "reason": kustomizev1.RenderSucceededReason,
			"message": "rendered " + res.ChartVersion, "observedGeneration": current.Generation,
			"lastTransitionTime": metav1.Now().UTC().Format(time.RFC3339),
		}},
	}
	g.Expect(reconcile.ApplyStatus(ctx, env.Client, current, "plumb-render", status)).To(Succeed())
}

func recordDigest(b []byte) string { return valuesDigest(string(b)) }

// records returns the release's records in Helm's storage, as their
// labels say; an error of the API fails the test.
func records(g Gomega, ns, release string) []helmstorage.Entry {
	entries, err := helmstorage.Storage{Client: env.Client, Namespace: ns, Release: release}.List(context.Background())
	g.Expect(err).NotTo(HaveOccurred())
	return entries
}

func TestReleasesAreRecordedInHelmsStorage(t *testing.T) {
	g := NewWithT(t)
	ctx, hr := newHelmRelease(t, func(hr *helmv2.HelmRelease) { hr.Spec.MaxHistory = new(2) })
	store := helmstorage.Storage{Client: env.Client, Namespace: hr.Namespace, Release: "app"}

	renderChart(t, hr, storageChart("1.0.0"), map[string]any{"greeting": "hi"})
	got := waitReleaseReady(t, hr, "1.0.0")
	g.Expect(got.Status.StorageNamespace).To(Equal(hr.Namespace))
	g.Expect(records(g, hr.Namespace, "app")).To(Equal([]helmstorage.Entry{{Version: 1, Status: common.StatusDeployed}}))
	sec := &corev1.Secret{}
	g.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: hr.Namespace, Name: "sh.helm.release.v1.app.v1"}, sec)).To(Succeed())
	g.Expect(sec.Type).To(Equal(corev1.SecretType("helm.sh/release.v1")))
	g.Expect(sec.Labels).To(HaveKeyWithValue("owner", "helm"))
	rel, err := store.Read(ctx, 1)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rel.Name).To(Equal("app"))
	g.Expect(rel.Namespace).To(Equal(hr.Namespace))
	g.Expect(rel.Info.Description).To(Equal("Install complete"))
	g.Expect(rel.Info.Notes).To(Equal("Say hi to app.\n"))
	g.Expect(rel.Chart.Metadata.Name).To(Equal("demo"))
	g.Expect(rel.Chart.Metadata.AppVersion).To(Equal("9.9.1"))
	g.Expect(rel.Chart.Values).To(HaveKeyWithValue("greeting", "hello"))
	g.Expect(rel.Config).To(Equal(map[string]any{"greeting": "hi"}))
	g.Expect(rel.Manifest).To(ContainSubstring("# Source: demo/templates/cm.yaml\n"))
	g.Expect(rel.Manifest).To(ContainSubstring(`greeting: "hi"`))
	g.Expect(rel.Manifest).NotTo(ContainSubstring("app-hook"))
	g.Expect(rel.Hooks).To(HaveLen(1))
	g.Expect(rel.Hooks[0].Name).To(Equal("app-hook"))
	g.Expect(rel.Hooks[0].Path).To(Equal("demo/templates/hook.yaml"))

	// What a rollback would read of it.
	got = getRelease(g, hr)
	past, err := readRelease(ctx, target.Target{Engine: engine.New(env.Client, nil, nil, 1)}, got, 1)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(past.Manifest).To(Equal(rel.Manifest))

	// The applied object carries Helm's ownership metadata.
	cm := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: hr.Namespace, Name: "app-cm"}, cm)).To(Succeed())
	g.Expect(cm.Labels).To(HaveKeyWithValue("app.kubernetes.io/managed-by", "Helm"))
	g.Expect(cm.Annotations).To(HaveKeyWithValue("meta.helm.sh/release-name", "app"))
	g.Expect(cm.Annotations).To(HaveKeyWithValue("meta.helm.sh/release-namespace", hr.Namespace))

	renderChart(t, hr, storageChart("2.0.0"), map[string]any{"greeting": "ho"})
	waitReleaseReady(t, hr, "2.0.0")
	g.Eventually(func(g Gomega) {
		g.Expect(records(g, hr.Namespace, "app")).To(Equal([]helmstorage.Entry{
			{Version: 1, Status: common.StatusSuperseded}, {Version: 2, Status: common.StatusDeployed}}))
	}, time.Minute, 100*time.Millisecond).Should(Succeed())
	rel, err = store.Read(ctx, 2)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rel.Info.Description).To(Equal("Upgrade complete"))

	// maxHistory: 2 keeps the newest two.
	renderChart(t, hr, storageChart("3.0.0"), nil)
	waitReleaseReady(t, hr, "3.0.0")
	g.Eventually(func(g Gomega) {
		g.Expect(records(g, hr.Namespace, "app")).To(Equal([]helmstorage.Entry{
			{Version: 2, Status: common.StatusSuperseded}, {Version: 3, Status: common.StatusDeployed}}))
	}, time.Minute, 100*time.Millisecond).Should(Succeed())

	// A failed release is recorded failed, and the deployed one stays
	// deployed, and kept by the trim.
	bad := storageChart("4.0.0")
	bad.Files["templates/bad.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: Not_A_Valid_Name\n"
	renderChart(t, hr, bad, nil)
	g.Eventually(func(g Gomega) {
		c := conditions.Get(getRelease(g, hr), helmv2.ReleasedCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(helmv2.UpgradeFailedReason))
		g.Expect(records(g, hr.Namespace, "app")).To(Equal([]helmstorage.Entry{
			{Version: 3, Status: common.StatusDeployed}, {Version: 4, Status: common.StatusFailed}}))
	}, time.Minute, 100*time.Millisecond).Should(Succeed())
	rel, err = store.Read(ctx, 4)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rel.Info.Description).To(HavePrefix(`Upgrade "app" failed: `))

	// The HelmRelease's deletion deletes its records.
	g.Expect(env.Client.Delete(ctx, hr)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(records(g, hr.Namespace, "app")).To(BeEmpty())
	}, time.Minute, 100*time.Millisecond).Should(Succeed())
}

// helmCLI is the helm CLI that `make helm-cli` (and `make test`) builds
// into bin/.
func helmCLI(t *testing.T) string {
	t.Helper()
	bin, err := filepath.Abs("../../../bin/helm")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("this test runs the helm CLI: build it with `make helm-cli` (%v)", err)
	}
	return bin
}

// helmIn returns a runner of the helm CLI against the test's API server in
// namespace ns, with a kubeconfig and helm's folders of its own; a failed
// command fails the test with its output.
func helmIn(ctx context.Context, t *testing.T, ns string) func(args ...string) string {
	t.Helper()
	helm := helmCLI(t)
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*env.Kubeconfig(), kubeconfig); err != nil {
		t.Fatal(err)
	}
	return func(args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, helm, append(args, "--kubeconfig", kubeconfig, "-n", ns)...)
		cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+dir, "HELM_CONFIG_HOME="+dir, "HELM_DATA_HOME="+dir)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("helm %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
}

func TestAReleaseOfTheHelmCLIIsAdoptedInPlace(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ns, err := env.Namespace(ctx, "adopt")
	g.Expect(err).NotTo(HaveOccurred())
	run := helmIn(ctx, t, ns)
	dir := t.TempDir()
	tgz, err := testhelm.Package(storageChart("1.0.0"))
	g.Expect(err).NotTo(HaveOccurred())
	chartFile := filepath.Join(dir, "demo-1.0.0.tgz")
	g.Expect(os.WriteFile(chartFile, tgz, 0o600)).To(Succeed())
	run("install", "app", chartFile, "--set", "greeting=hi")
	before := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "app-cm"}, before)).To(Succeed())

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
	renderChart(t, hr, storageChart("2.0.0"), map[string]any{"greeting": "ho"})
	got := waitReleaseReady(t, hr, "2.0.0")
	g.Expect(got.Status.History).NotTo(BeEmpty())
	g.Expect(got.Status.History[0].Version).To(Equal(2))
	g.Eventually(func() []string {
		var reasons []string
		for _, e := range events.withReason(helmv2.AdoptedReason) {
			reasons = append(reasons, e.Message)
		}
		return reasons
	}, 10*time.Second, 100*time.Millisecond).Should(ContainElement(ContainSubstring("at revision 1")))

	// Taken over in place: the same object, now with the new values.
	after := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "app-cm"}, after)).To(Succeed())
	g.Expect(after.UID).To(Equal(before.UID))
	g.Expect(after.Data).To(HaveKeyWithValue("greeting", "ho"))

	// What helm reads of it.
	var history []struct {
		Revision    int    `json:"revision"`
		Status      string `json:"status"`
		Chart       string `json:"chart"`
		AppVersion  string `json:"app_version"`
		Description string `json:"description"`
	}
	g.Expect(json.Unmarshal([]byte(run("history", "app", "-o", "json")), &history)).To(Succeed())
	g.Expect(history).To(HaveLen(2))
	g.Expect(history[0].Revision).To(Equal(1))
	g.Expect(history[0].Status).To(Equal("superseded"))
	g.Expect(history[1].Revision).To(Equal(2))
	g.Expect(history[1].Status).To(Equal("deployed"))
	g.Expect(history[1].Chart).To(Equal("demo-2.0.0"))
	g.Expect(history[1].AppVersion).To(Equal("9.9.2"))
	g.Expect(history[1].Description).To(Equal("Upgrade complete"))

	var values map[string]any
	g.Expect(json.Unmarshal([]byte(run("get", "values", "app", "-o", "json")), &values)).To(Succeed())
	g.Expect(values).To(Equal(map[string]any{"greeting": "ho"}))
	manifest := run("get", "manifest", "app")
	g.Expect(manifest).To(ContainSubstring("name: app-cm"))
	g.Expect(manifest).To(ContainSubstring(`greeting: "ho"`))
	g.Expect(run("get", "notes", "app")).To(ContainSubstring("Say ho to app."))
	g.Expect(run("get", "hooks", "app")).To(ContainSubstring("name: app-hook"))
	var status struct {
		Version int `json:"version"`
		Info    struct {
			Status string `json:"status"`
		} `json:"info"`
	}
	g.Expect(json.Unmarshal([]byte(run("status", "app", "-o", "json")), &status)).To(Succeed())
	g.Expect(status.Version).To(Equal(2))
	g.Expect(status.Info.Status).To(Equal("deployed"))
	g.Expect(run("list", "-o", "json")).To(ContainSubstring(`"chart":"demo-2.0.0"`))
}
