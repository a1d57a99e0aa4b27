package controller

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/events"
	"plumb.dev/pkg/helmrender"
)

// testHelmLimits are the chart and values limits of the reconciler under
// test.
var testHelmLimits = helmrender.Limits{MaxArchiveBytes: 1 << 20, MaxDecompressedBytes: 1 << 20, MaxValuesBytes: 64 << 10}

// --- charts ---

// testChart packages a chart with the Helm SDK (loaded from a folder,
// saved as a .tgz) and returns the archive. files are the chart's files
// besides Chart.yaml (templates/…, values.yaml, crds/…).
func testChart(t *testing.T, name, version string, files map[string]string) []byte {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	all := map[string]string{"Chart.yaml": fmt.Sprintf("apiVersion: v2\nname: %s\nversion: %s\n", name, version)}
	for k, v := range files {
		all[k] = v
	}
	for p, body := range all {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ch, err := loader.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	out, err := chartutil.Save(ch, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// valuesChart renders its values as JSON into a ConfigMap, and the
// release's name, namespace and install state.
func valuesChart(t *testing.T, version, values string) []byte {
	return testChart(t, "values", version, map[string]string{
		"values.yaml": values,
		"templates/values.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-values
  namespace: {{ .Release.Namespace }}
data:
  values: {{ toJson .Values | quote }}
  install: {{ .Release.IsInstall | quote }}
`,
	})
}

// setChartArtifact serves data as the HelmChart's artifact and makes the
// HelmChart Ready with it, as source-controller would.
func setChartArtifact(t *testing.T, ns, name, version string, data []byte) *meta.Artifact {
	t.Helper()
	a := sources.serve(fmt.Sprintf("/helmchart/%s/%s/%s-%s.tgz", ns, name, name, version), version, data, "")
	g := NewWithT(t)
	g.Eventually(func() error {
		var hc sourcev1.HelmChart
		if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, &hc); err != nil {
			return err
		}
		hc.Status.Artifact = a
		hc.Status.ObservedGeneration = hc.Generation
		hc.Status.Conditions = []metav1.Condition{{
			Type: meta.ReadyCondition, Status: metav1.ConditionTrue, Reason: meta.SucceededReason,
			Message: "packaged chart version " + version, ObservedGeneration: hc.Generation, LastTransitionTime: metav1.Now(),
		}}
		return k8s.Status().Update(context.Background(), &hc)
	}, timeout, poll).Should(Succeed())
	return a
}

// helmChartObject creates a HelmChart (for a chartRef).
func helmChartObject(t *testing.T, ns, name string) {
	t.Helper()
	hc := &sourcev1.HelmChart{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: sourcev1.HelmChartSpec{
			Chart:     "values",
			SourceRef: sourcev1.LocalHelmChartSourceReference{Kind: sourcev1.HelmRepositoryKind, Name: "repo"},
			Interval:  metav1.Duration{Duration: time.Hour},
		},
	}
	NewWithT(t).Expect(k8s.Create(context.Background(), hc)).To(Succeed())
}

// chartSpec is a spec.chart template for chart "values" of HelmRepository repo.
func chartSpec() *helmv2.HelmChartTemplate {
	return &helmv2.HelmChartTemplate{Spec: helmv2.HelmChartTemplateSpec{
		Chart:     "values",
		Version:   "1.x",
		SourceRef: helmv2.CrossNamespaceObjectReference{Kind: sourcev1.HelmRepositoryKind, Name: "repo"},
	}}
}

func helmRelease(t *testing.T, ns, name string, mutate func(*helmv2.HelmReleaseSpec)) *helmv2.HelmRelease {
	t.Helper()
	hr := &helmv2.HelmRelease{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       helmv2.HelmReleaseSpec{Chart: chartSpec(), Interval: metav1.Duration{Duration: time.Hour}},
	}
	if mutate != nil {
		mutate(&hr.Spec)
	}
	NewWithT(t).Expect(k8s.Create(context.Background(), hr)).To(Succeed())
	return hr
}

func getHR(g Gomega, ns, name string) *helmv2.HelmRelease {
	var hr helmv2.HelmRelease
	g.Expect(k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, &hr)).To(Succeed())
	return &hr
}

func hrRendered(hr *helmv2.HelmRelease) *metav1.Condition {
	for i := range hr.Status.Conditions {
		if hr.Status.Conditions[i].Type == kustomizev1.RenderedCondition {
			return &hr.Status.Conditions[i]
		}
	}
	return nil
}

// waitHR waits until Rendered has status and reason for the current
// generation and returns the HelmRelease.
func waitHR(t *testing.T, ns, name string, status metav1.ConditionStatus, reason string) *helmv2.HelmRelease {
	t.Helper()
	var hr *helmv2.HelmRelease
	NewWithT(t).Eventually(func(g Gomega) {
		hr = getHR(g, ns, name)
		c := hrRendered(hr)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(status), c.Message)
		g.Expect(c.Reason).To(Equal(reason), c.Message)
		g.Expect(c.ObservedGeneration).To(Equal(hr.Generation))
	}, timeout, poll).Should(Succeed())
	return hr
}

// waitHRValues waits for a good render whose values ConfigMap holds the
// values and returns the HelmRelease and the manifests.
func waitHRValues(t *testing.T, ns, name string, check func(g Gomega, values map[string]any, install string)) (*helmv2.HelmRelease, string) {
	t.Helper()
	var hr *helmv2.HelmRelease
	var body string
	NewWithT(t).Eventually(func(g Gomega) {
		hr = getHR(g, ns, name)
		c := hrRendered(hr)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue), c.Message)
		g.Expect(hr.Status.RenderedArtifact).NotTo(BeNil())
		body = download(t, hr.Status.RenderedArtifact)
		values, install := renderedValues(g, body)
		check(g, values, install)
	}, timeout, poll).Should(Succeed())
	return hr, body
}

// renderedValues reads the values ConfigMap of valuesChart's render.
func renderedValues(g Gomega, manifests string) (map[string]any, string) {
	for _, doc := range strings.Split(manifests, "\n---\n") {
		var cm corev1.ConfigMap
		if err := yaml.Unmarshal([]byte(doc), &cm); err != nil || cm.Kind != "ConfigMap" || !strings.HasSuffix(cm.Name, "-values") {
			continue
		}
		var v map[string]any
		g.Expect(yaml.Unmarshal([]byte(cm.Data["values"]), &v)).To(Succeed())
		return v, cm.Data["install"]
	}
	g.Expect(manifests).To(ContainSubstring("-values"), "no values ConfigMap rendered")
	return nil, ""
}

func getChart(g Gomega, ns, name string) *sourcev1.HelmChart {
	var hc sourcev1.HelmChart
	g.Expect(k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, &hc)).To(Succeed())
	return &hc
}

// chartGone reports whether the HelmChart is gone; any other error fails.
func chartGone(g Gomega, ns, name string) bool {
	err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, &sourcev1.HelmChart{})
	if apierrors.IsNotFound(err) {
		return true
	}
	g.Expect(err).NotTo(HaveOccurred())
	return false
}

func requestHRReconcile(t *testing.T, ns, name string) {
	t.Helper()
	patch := []byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, meta.ReconcileRequestAnnotation, time.Now().Format(time.RFC3339Nano)))
	hr := &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	NewWithT(t).Expect(k8s.Patch(context.Background(), hr, client.RawPatch(types.MergePatchType, patch))).To(Succeed())
}

func updateHR(t *testing.T, ns, name string, mutate func(*helmv2.HelmReleaseSpec)) {
	t.Helper()
	NewWithT(t).Eventually(func() error {
		var hr helmv2.HelmRelease
		if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, &hr); err != nil {
			return err
		}
		mutate(&hr.Spec)
		return k8s.Update(context.Background(), &hr)
	}, timeout, poll).Should(Succeed())
}

func jsonValues(t *testing.T, v any) *apiextensionsv1.JSON {
	t.Helper()
	b, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	j, err := yaml.YAMLToJSON(b)
	if err != nil {
		t.Fatal(err)
	}
	return &apiextensionsv1.JSON{Raw: j}
}

// --- tests ---

// spec.chart: render-controller creates the HelmChart <ns>-<name> with the
// template's spec, labels and annotations and the HelmRelease's interval,
// waits for its artifact, then renders; a deployed release makes the next
// render an upgrade.
func TestHelmReleaseChartSpec(t *testing.T) {
	g := NewWithT(t)
	ns := namespace(t)
	helmRelease(t, ns, "app", func(s *helmv2.HelmReleaseSpec) {
		s.Chart.ObjectMeta = &helmv2.HelmChartTemplateObjectMeta{
			Labels: map[string]string{"team": "a"}, Annotations: map[string]string{"note": "from the template"},
		}
		s.Chart.Spec.ValuesFiles = []string{"values-prod.yaml"}
		s.Chart.Spec.IgnoreMissingValuesFiles = true
		s.Chart.Spec.ReconcileStrategy = sourcev1.ReconcileStrategyRevision
		s.TargetNamespace = "apps"
		s.Values = jsonValues(t, map[string]any{"greeting": "hello"})
	})
	chartName := ns + "-app"
	hr := waitHR(t, ns, "app", metav1.ConditionFalse, meta.DependencyNotReadyReason)
	g.Expect(hrRendered(hr).Message).To(HavePrefix(fmt.Sprintf("waiting for HelmChart %s/%s: ", ns, chartName)))
	g.Expect(hr.Status.HelmChart).To(Equal(ns + "/" + chartName))
	g.Expect(hr.Status.RenderedArtifact).To(BeNil())

	hc := getChart(g, ns, chartName)
	g.Expect(hc.Spec.Chart).To(Equal("values"))
	g.Expect(hc.Spec.Version).To(Equal("1.x"))
	g.Expect(hc.Spec.SourceRef).To(Equal(sourcev1.LocalHelmChartSourceReference{Kind: sourcev1.HelmRepositoryKind, Name: "repo"}))
	g.Expect(hc.Spec.Interval.Duration).To(Equal(time.Hour), "the HelmRelease's interval")
	g.Expect(hc.Spec.ValuesFiles).To(Equal([]string{"values-prod.yaml"}))
	g.Expect(hc.Spec.IgnoreMissingValuesFiles).To(BeTrue())
	g.Expect(hc.Spec.ReconcileStrategy).To(Equal(sourcev1.ReconcileStrategyRevision))
	g.Expect(hc.Labels).To(HaveKeyWithValue("team", "a"))
	g.Expect(hc.Labels).To(HaveKeyWithValue(helmv2.NameLabel, "app"))
	g.Expect(hc.Labels).To(HaveKeyWithValue(helmv2.NamespaceLabel, ns))
	g.Expect(hc.Annotations).To(HaveKeyWithValue("note", "from the template"))

	setChartArtifact(t, ns, chartName, "1.2.3", valuesChart(t, "1.2.3", "greeting: default\nsize: 1\n"))
	hr, body := waitHRValues(t, ns, "app", func(g Gomega, v map[string]any, install string) {
		g.Expect(v).To(Equal(map[string]any{"greeting": "hello", "size": float64(1)}))
		g.Expect(install).To(Equal("true"))
	})
	g.Expect(body).To(ContainSubstring("name: apps-app-values"), "release name [<targetNamespace>-]<name>")
	g.Expect(body).To(ContainSubstring("namespace: apps"))
	a := hr.Status.RenderedArtifact
	g.Expect(a.Revision).To(Equal("1.2.3"))
	g.Expect(a.Metadata).To(HaveKeyWithValue(helmv2.ArtifactInputsDigestKey, MatchRegexp(`^sha256:[0-9a-f]{64}$`)))
	g.Expect(a.Metadata).To(Equal(map[string]string{
		helmv2.ArtifactChartNameKey:     "values",
		helmv2.ArtifactChartVersionKey:  "1.2.3",
		helmv2.ArtifactConfigDigestKey:  helmv2.ConfigDigest(map[string]any{"greeting": "hello"}),
		helmv2.ArtifactInputsDigestKey:  a.Metadata[helmv2.ArtifactInputsDigestKey],
		helmv2.ArtifactReleaseActionKey: helmv2.ReleaseActionInstall,
		// The release record beside the manifests, for Helm's storage.
		helmv2.ArtifactReleaseRecordKey:       a.Metadata[helmv2.ArtifactReleaseRecordKey],
		helmv2.ArtifactReleaseRecordDigestKey: a.Metadata[helmv2.ArtifactReleaseRecordDigestKey],
	}))
	g.Expect(a.Metadata[helmv2.ArtifactReleaseRecordKey]).To(HaveSuffix(".release.json.gz"))
	rec := download(t, &meta.Artifact{URL: a.Metadata[helmv2.ArtifactReleaseRecordKey], Digest: a.Metadata[helmv2.ArtifactReleaseRecordDigestKey]})
	g.Expect(rec).NotTo(BeEmpty())
	g.Expect(body).To(ContainSubstring("meta.helm.sh/release-name: apps-app"), "Helm's ownership metadata")
	g.Expect(a.Path).To(Equal(fmt.Sprintf("helmrelease/%s/app/%s.yaml", ns, strings.TrimPrefix(a.Digest, "sha256:"))))
	g.Expect(hrRendered(hr).Message).To(Equal(`rendered 1 objects from chart values version "1.2.3"`))
	g.Expect(published.of(ns, "app", kustomizev1.RenderedReason)).To(HaveLen(1))

	// The chart interval of the template wins over the HelmRelease's.
	updateHR(t, ns, "app", func(s *helmv2.HelmReleaseSpec) { s.Chart.Spec.Interval = &metav1.Duration{Duration: 7 * time.Minute} })
	g.Eventually(func(g Gomega) {
		g.Expect(getChart(g, ns, chartName).Spec.Interval.Duration).To(Equal(7 * time.Minute))
	}, timeout, poll).Should(Succeed())
	// The HelmChart's new generation is not reconciled: the render waits.
	waitHR(t, ns, "app", metav1.ConditionFalse, meta.DependencyNotReadyReason)
	setChartArtifact(t, ns, chartName, "1.2.3", valuesChart(t, "1.2.3", "greeting: default\nsize: 1\n"))
	waitHR(t, ns, "app", metav1.ConditionTrue, kustomizev1.RenderSucceededReason)

	// The same chart artifact after the HelmChart's new generation: the
	// stored render stays.
	g.Expect(getHR(g, ns, "app").Status.RenderedArtifact.Digest).To(Equal(a.Digest))

	// sync-controller records a deployed release; the next render (for new
	// values) is an upgrade.
	markDeployed(t, ns, "app")
	updateHR(t, ns, "app", func(s *helmv2.HelmReleaseSpec) { s.Values = jsonValues(t, map[string]any{"greeting": "again"}) })
	waitHRValues(t, ns, "app", func(g Gomega, v map[string]any, install string) {
		g.Expect(v).To(HaveKeyWithValue("greeting", "again"))
		g.Expect(install).To(Equal("false"))
	})
}

// markDeployed records the HelmRelease's rendered artifact as its deployed
// release in status.history, as sync-controller does after the install.
func markDeployed(t *testing.T, ns, name string) {
	t.Helper()
	g := NewWithT(t)
	live := getHR(g, ns, name)
	a := live.Status.RenderedArtifact
	g.Expect(a).NotTo(BeNil())
	patch := client.MergeFrom(live.DeepCopy())
	now := metav1.Now()
	live.Status.History = []helmv2.Snapshot{{
		Version: 1, Name: live.GetReleaseName(), Namespace: live.GetReleaseNamespace(),
		ChartName: a.Metadata[helmv2.ArtifactChartNameKey], ChartVersion: a.Revision,
		ConfigDigest: a.Metadata[helmv2.ArtifactConfigDigestKey], Digest: a.Digest,
		FirstDeployed: now, LastDeployed: now, Status: helmv2.ReleaseStatusDeployed,
	}}
	g.Expect(k8s.Status().Patch(context.Background(), live, patch)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(installing(getHR(g, ns, name))).To(BeFalse())
	}, timeout, poll).Should(Succeed())
}

// spec.chartRef: an existing HelmChart is rendered and never deleted.
func TestHelmReleaseChartRef(t *testing.T) {
	g := NewWithT(t)
	ns := namespace(t)
	helmChartObject(t, ns, "shared")
	setChartArtifact(t, ns, "shared", "2.0.0", valuesChart(t, "2.0.0", "greeting: shared\n"))
	hr := helmRelease(t, ns, "app", func(s *helmv2.HelmReleaseSpec) {
		s.Chart = nil
		s.ChartRef = &helmv2.CrossNamespaceSourceReference{Kind: sourcev1.HelmChartKind, Name: "shared"}
	})
	got, _ := waitHRValues(t, ns, "app", func(g Gomega, v map[string]any, _ string) {
		g.Expect(v).To(HaveKeyWithValue("greeting", "shared"))
	})
	g.Expect(got.Status.HelmChart).To(Equal(ns + "/shared"))
	g.Expect(got.Status.RenderedArtifact.Revision).To(Equal("2.0.0"))
	g.Expect(chartGone(g, ns, ns+"-app")).To(BeTrue(), "no HelmChart is created for a chartRef")

	// A new artifact of the HelmChart re-renders.
	setChartArtifact(t, ns, "shared", "2.1.0", valuesChart(t, "2.1.0", "greeting: newer\n"))
	waitHRValues(t, ns, "app", func(g Gomega, v map[string]any, _ string) {
		g.Expect(v).To(HaveKeyWithValue("greeting", "newer"))
	})

	g.Expect(k8s.Delete(context.Background(), hr)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(k8s.Get(context.Background(), client.ObjectKeyFromObject(hr), &helmv2.HelmRelease{}))
	}, timeout, poll).Should(BeTrue())
	g.Expect(chartGone(g, ns, "shared")).To(BeFalse(), "a referenced HelmChart is not the HelmRelease's to delete")
}

// valuesFrom in order (ConfigMap, Secret, targetPath, optional missing),
// then spec.values; the config digest is that of the merged values.
func TestHelmReleaseValuesMergeOrder(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t)
	g.Expect(k8s.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "base"},
		Data: map[string]string{
			"values.yaml": "a: cm\nnested: {x: cm, keep: cm}\nlist: [cm]\n",
			"port":        "8080",
		},
	})).To(Succeed())
	g.Expect(k8s.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "creds"},
		StringData: map[string]string{
			"custom.yaml": "b: secret\nnested: {w: secret}\nlist: [secret]\n",
			"password":    "s3cr,et=x",
		},
	})).To(Succeed())
	helmChartObject(t, ns, "chart")
	setChartArtifact(t, ns, "chart", "1.0.0", valuesChart(t, "1.0.0", "a: chart\nb: chart\nc: chart\nnested: {x: chart, w: chart, z: chart}\n"))
	helmRelease(t, ns, "app", func(s *helmv2.HelmReleaseSpec) {
		s.Chart = nil
		s.ChartRef = &helmv2.CrossNamespaceSourceReference{Kind: sourcev1.HelmChartKind, Name: "chart"}
		s.ValuesFrom = []helmv2.ValuesReference{
			{Kind: "ConfigMap", Name: "base"},
			{Kind: "Secret", Name: "creds", ValuesKey: "custom.yaml"},
			{Kind: "ConfigMap", Name: "base", ValuesKey: "port", TargetPath: "service.port"},
			{Kind: "Secret", Name: "creds", ValuesKey: "password", TargetPath: "auth.password"},
			{Kind: "ConfigMap", Name: "absent", Optional: true},
			{Kind: "Secret", Name: "creds", ValuesKey: "absent.yaml", Optional: true},
		}
		s.Values = jsonValues(t, map[string]any{"c": "values", "nested": map[string]any{"z": "values"}})
	})
	user := map[string]any{
		"a": "cm", "b": "secret", "c": "values",
		"nested":  map[string]any{"x": "cm", "keep": "cm", "w": "secret", "z": "values"},
		"list":    []any{"secret"},
		"service": map[string]any{"port": float64(8080)},
		"auth":    map[string]any{"password": "s3cr,et=x"},
	}
	hr, _ := waitHRValues(t, ns, "app", func(g Gomega, v map[string]any, _ string) {
		g.Expect(v).To(Equal(user), "chart values under valuesFrom in order under spec.values")
	})
	g.Expect(hr.Status.RenderedArtifact.Metadata).To(HaveKeyWithValue(helmv2.ArtifactConfigDigestKey, helmv2.ConfigDigest(map[string]any{
		"a": "cm", "b": "secret", "c": "values",
		"nested":  map[string]any{"x": "cm", "keep": "cm", "w": "secret", "z": "values"},
		"list":    []any{"secret"},
		"service": map[string]any{"port": int64(8080)},
		"auth":    map[string]any{"password": "s3cr,et=x"},
	})))

	// A missing key that is not optional fails with its name; the last
	// good render stays.
	updateHR(t, ns, "app", func(s *helmv2.HelmReleaseSpec) {
		s.ValuesFrom = append(s.ValuesFrom, helmv2.ValuesReference{Kind: "Secret", Name: "creds", ValuesKey: "nope.yaml"})
	})
	failed := waitHR(t, ns, "app", metav1.ConditionFalse, helmv2.ValuesFailedReason)
	g.Expect(hrRendered(failed).Message).To(ContainSubstring(fmt.Sprintf(`spec.valuesFrom[6]: Secret %s/creds has no key "nope.yaml"; set optional: true to render without it`, ns)))
	g.Expect(hrRendered(failed).Message).To(ContainSubstring(`still serving the render of chart version "1.0.0"`))
	g.Expect(failed.Status.RenderedArtifact).To(Equal(hr.Status.RenderedArtifact))

	// A Secret whose values do not parse: the message says where, never
	// what.
	g.Expect(k8s.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "broken"},
		StringData: map[string]string{"values.yaml": "password: [hunter2-topsecret\n"},
	})).To(Succeed())
	updateHR(t, ns, "app", func(s *helmv2.HelmReleaseSpec) {
		s.ValuesFrom = []helmv2.ValuesReference{{Kind: "Secret", Name: "broken"}}
	})
	g.Eventually(func(g Gomega) {
		c := hrRendered(getHR(g, ns, "app"))
		g.Expect(c.Reason).To(Equal(helmv2.ValuesFailedReason))
		g.Expect(c.Message).To(ContainSubstring(fmt.Sprintf("spec.valuesFrom[0]: Secret %s/broken key \"values.yaml\" is not a YAML document of values", ns)))
	}, timeout, poll).Should(Succeed())
	for _, e := range published.all(ns, "app") {
		g.Expect(e.Message).NotTo(ContainSubstring("hunter2"))
		g.Expect(e.Message).NotTo(ContainSubstring("s3cr,et"))
	}
	g.Expect(hrRendered(getHR(g, ns, "app")).Message).NotTo(ContainSubstring("hunter2"))

	// Values over --max-values-size are refused.
	big := strings.Repeat("x", int(testHelmLimits.MaxValuesBytes))
	g.Expect(k8s.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "big"},
		Data:       map[string]string{"values.yaml": "big: " + big},
	})).To(Succeed())
	updateHR(t, ns, "app", func(s *helmv2.HelmReleaseSpec) {
		s.ValuesFrom = []helmv2.ValuesReference{{Kind: "ConfigMap", Name: "big"}}
	})
	failed = waitHR(t, ns, "app", metav1.ConditionFalse, meta.LimitExceededReason)
	g.Expect(hrRendered(failed).Message).To(ContainSubstring("--max-values-size"))
}

// A change of a valuesFrom ConfigMap re-renders at once (the metadata
// watch), and a reconcile with nothing changed renders nothing.
func TestHelmReleaseConfigMapChangeRerenders(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t)
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "settings", Labels: map[string]string{"team": "a"}},
		Data:       map[string]string{"values.yaml": "greeting: first\n"},
	}
	g.Expect(k8s.Create(ctx, cm)).To(Succeed())
	helmChartObject(t, ns, "chart")
	setChartArtifact(t, ns, "chart", "1.0.0", valuesChart(t, "1.0.0", "greeting: chart\n"))
	helmRelease(t, ns, "app", func(s *helmv2.HelmReleaseSpec) {
		s.Chart = nil
		s.ChartRef = &helmv2.CrossNamespaceSourceReference{Kind: sourcev1.HelmChartKind, Name: "chart"}
		s.ValuesFrom = []helmv2.ValuesReference{{Kind: "ConfigMap", Name: "settings"}}
	})
	first, _ := waitHRValues(t, ns, "app", func(g Gomega, v map[string]any, _ string) {
		g.Expect(v).To(HaveKeyWithValue("greeting", "first"))
	})
	key := types.NamespacedName{Namespace: ns, Name: "app"}
	renders := settledRenders(t, key)

	// The watch's cache keeps the ConfigMap's name and version, not its
	// labels (TrimConfigMapMetadata); the change below still comes through.
	inCache := &metav1.PartialObjectMetadata{}
	inCache.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
	g.Expect(cached.Get(ctx, client.ObjectKeyFromObject(cm), inCache)).To(Succeed())
	g.Expect(inCache.ResourceVersion).NotTo(BeEmpty())
	g.Expect(inCache.Labels).To(BeEmpty())

	// Nothing changed: a requested reconcile renders nothing.
	reconciles := helmRec.count(key).reconciles.Load()
	requestHRReconcile(t, ns, "app")
	g.Eventually(func() int64 { return helmRec.count(key).reconciles.Load() }, timeout, poll).Should(BeNumerically(">", reconciles))
	g.Consistently(func() int64 { return helmRec.Renders(key) }, time.Second, poll).Should(Equal(renders), "nothing changed: no render")

	cm.Data["values.yaml"] = "greeting: second\n"
	g.Expect(k8s.Update(ctx, cm)).To(Succeed())
	second, _ := waitHRValues(t, ns, "app", func(g Gomega, v map[string]any, _ string) {
		g.Expect(v).To(HaveKeyWithValue("greeting", "second"))
	})
	g.Expect(second.Status.RenderedArtifact.Digest).NotTo(Equal(first.Status.RenderedArtifact.Digest))
	g.Expect(second.Status.RenderedArtifact.Metadata[helmv2.ArtifactConfigDigestKey]).
		NotTo(Equal(first.Status.RenderedArtifact.Metadata[helmv2.ArtifactConfigDigestKey]))
	g.Expect(helmRec.Renders(key)).To(Equal(renders + 1))

	// A Secret of valuesFrom created later, then changed: Secrets are not
	// watched (render-controller may not list or watch them), so each is
	// read at the next reconcile, here requested by the annotation.
	updateHR(t, ns, "app", func(s *helmv2.HelmReleaseSpec) {
		s.ValuesFrom = append(s.ValuesFrom, helmv2.ValuesReference{Kind: "Secret", Name: "late", ValuesKey: "v", TargetPath: "token"})
	})
	waitHR(t, ns, "app", metav1.ConditionFalse, helmv2.ValuesFailedReason)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "late"}, StringData: map[string]string{"v": "one"}}
	g.Expect(k8s.Create(ctx, secret)).To(Succeed())
	requestHRReconcile(t, ns, "app")
	waitHRValues(t, ns, "app", func(g Gomega, v map[string]any, _ string) {
		g.Expect(v).To(HaveKeyWithValue("token", "one"))
	})
	renders = helmRec.Renders(key)
	secret.StringData = map[string]string{"v": "two"}
	g.Expect(k8s.Update(ctx, secret)).To(Succeed())
	requestHRReconcile(t, ns, "app")
	third, _ := waitHRValues(t, ns, "app", func(g Gomega, v map[string]any, _ string) {
		g.Expect(v).To(HaveKeyWithValue("token", "two"))
	})
	g.Expect(helmRec.Renders(key)).To(Equal(renders + 1))
	g.Expect(published.of(ns, "app", kustomizev1.RenderedReason)).To(ContainElement(
		HaveField("Metadata", HaveKeyWithValue("digest", third.Status.RenderedArtifact.Digest))), "the new render is announced")
}

// A chart artifact whose bytes are not the announced digest is refused.
func TestHelmReleaseTamperedChartRefused(t *testing.T) {
	g := NewWithT(t)
	ns := namespace(t)
	helmChartObject(t, ns, "chart")
	a := setChartArtifact(t, ns, "chart", "1.0.0", valuesChart(t, "1.0.0", "a: b\n"))
	sources.serve("/"+a.Path, a.Revision, valuesChart(t, "1.0.0", "a: tampered\n"), a.Digest)
	helmRelease(t, ns, "app", func(s *helmv2.HelmReleaseSpec) {
		s.Chart = nil
		s.ChartRef = &helmv2.CrossNamespaceSourceReference{Kind: sourcev1.HelmChartKind, Name: "chart"}
	})
	hr := waitHR(t, ns, "app", metav1.ConditionFalse, meta.ArtifactFailedReason)
	g.Expect(hrRendered(hr).Message).To(ContainSubstring("refusing a tampered or partial artifact"))
	g.Expect(hr.Status.RenderedArtifact).To(BeNil())
}

// .Capabilities.APIVersions.Has sees a CRD installed in the cluster.
func TestHelmReleaseCapabilitiesSeeInstalledCRD(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t)
	group := strings.ReplaceAll(ns, "-", "") + ".example.plumb.dev"
	gvk := group + "/v1/Widget"
	helmChartObject(t, ns, "chart")
	setChartArtifact(t, ns, "chart", "1.0.0", testChart(t, "caps", "1.0.0", map[string]string{
		"templates/caps.yaml": fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata:
  name: caps
data:
  widgets: {{ .Capabilities.APIVersions.Has %q | quote }}
  kube: {{ .Capabilities.KubeVersion.Version | quote }}
`, gvk),
	}))
	helmRelease(t, ns, "app", func(s *helmv2.HelmReleaseSpec) {
		s.Chart = nil
		s.ChartRef = &helmv2.CrossNamespaceSourceReference{Kind: sourcev1.HelmChartKind, Name: "chart"}
	})
	disc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	g.Expect(err).NotTo(HaveOccurred())
	version, err := disc.ServerVersion()
	g.Expect(err).NotTo(HaveOccurred())
	hr := waitHR(t, ns, "app", metav1.ConditionTrue, kustomizev1.RenderSucceededReason)
	body := download(t, hr.Status.RenderedArtifact)
	g.Expect(body).To(ContainSubstring(`widgets: "false"`))
	g.Expect(body).To(ContainSubstring("kube: " + version.GitVersion + "\n"))

	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group, Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptrTo(true)}},
			}},
		},
	}
	scheme := runtime.NewScheme()
	g.Expect(apiextensionsv1.AddToScheme(scheme)).To(Succeed())
	crdClient, err := client.New(env.Config, client.Options{Scheme: scheme})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(crdClient.Create(ctx, crd)).To(Succeed())
	t.Cleanup(func() { _ = crdClient.Delete(context.Background(), crd) })
	g.Eventually(func() error {
		_, err := disc.ServerResourcesForGroupVersion(group + "/v1")
		return err
	}, timeout, poll).Should(Succeed(), "the API server serves the CRD")

	// New capabilities alone make no new release, as in Helm and Flux: a
	// reconcile serves the same render...
	before := hr.Status.RenderedArtifact.Digest
	key := types.NamespacedName{Namespace: ns, Name: "app"}
	renders := settledRenders(t, key)
	reconciles := helmRec.count(key).reconciles.Load()
	requestHRReconcile(t, ns, "app")
	g.Eventually(func() int64 { return helmRec.count(key).reconciles.Load() }, timeout, poll).Should(BeNumerically(">", reconciles))
	g.Consistently(func(g Gomega) {
		hr := getHR(g, ns, "app")
		g.Expect(hr.Status.RenderedArtifact.Digest).To(Equal(before))
		g.Expect(hrRendered(hr).Status).To(Equal(metav1.ConditionTrue))
		g.Expect(helmRec.Renders(key)).To(Equal(renders), "new capabilities alone rendered again")
	}, time.Second, poll).Should(Succeed())

	// ...and the next render made for another reason (new values) sees them.
	updateHR(t, ns, "app", func(s *helmv2.HelmReleaseSpec) { s.Values = jsonValues(t, map[string]any{"bump": 1}) })
	g.Eventually(func(g Gomega) {
		hr := getHR(g, ns, "app")
		g.Expect(download(t, hr.Status.RenderedArtifact)).To(ContainSubstring(`widgets: "true"`))
	}, timeout, time.Second).Should(Succeed())
}

func ptrTo[T any](v T) *T { return &v }

// A template error keeps the last good render: Rendered=False with the
// render's reason and the template file named.
func TestHelmReleaseTemplateErrorKeepsLastGoodRender(t *testing.T) {
	g := NewWithT(t)
	ns := namespace(t)
	helmChartObject(t, ns, "chart")
	files := map[string]string{
		"values.yaml": "broken: false\n",
		"templates/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: good
`,
		"templates/broken.yaml": `{{- if .Values.broken }}{{ fail "broken on purpose" }}{{ end }}`,
	}
	setChartArtifact(t, ns, "chart", "1.0.0", testChart(t, "fragile", "1.0.0", files))
	helmRelease(t, ns, "app", func(s *helmv2.HelmReleaseSpec) {
		s.Chart = nil
		s.ChartRef = &helmv2.CrossNamespaceSourceReference{Kind: sourcev1.HelmChartKind, Name: "chart"}
	})
	good := waitHR(t, ns, "app", metav1.ConditionTrue, kustomizev1.RenderSucceededReason)
	goodBody := download(t, good.Status.RenderedArtifact)

	updateHR(t, ns, "app", func(s *helmv2.HelmReleaseSpec) { s.Values = jsonValues(t, map[string]any{"broken": true}) })
	var failed *helmv2.HelmRelease
	g.Eventually(func(g Gomega) {
		failed = getHR(g, ns, "app")
		c := hrRendered(failed)
		g.Expect(c.ObservedGeneration).To(Equal(failed.Generation))
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
	}, timeout, poll).Should(Succeed())
	c := hrRendered(failed)
	g.Expect(c.Reason).NotTo(BeElementOf(kustomizev1.RenderSucceededReason, meta.DependencyNotReadyReason, helmv2.ValuesFailedReason))
	g.Expect(c.Message).To(ContainSubstring("templates/broken.yaml"))
	g.Expect(c.Message).To(ContainSubstring("broken on purpose"))
	g.Expect(c.Message).To(ContainSubstring(`still serving the render of chart version "1.0.0"`))
	g.Expect(failed.Status.RenderedArtifact).To(Equal(good.Status.RenderedArtifact))
	g.Expect(download(t, failed.Status.RenderedArtifact)).To(Equal(goodBody))
	g.Eventually(func() []string {
		var reasons []string
		for _, e := range published.all(ns, "app") {
			if strings.Contains(e.Message, "broken on purpose") {
				reasons = append(reasons, e.Reason)
			}
		}
		return reasons
	}, timeout, poll).Should(ContainElement(c.Reason), "an error event with the render's reason")

	// Fixed: back to the inputs of the good render, which is served again
	// without rendering, and announced again.
	key := types.NamespacedName{Namespace: ns, Name: "app"}
	renders := settledRenders(t, key)
	announced := len(published.of(ns, "app", kustomizev1.RenderedReason))
	updateHR(t, ns, "app", func(s *helmv2.HelmReleaseSpec) { s.Values = nil })
	fixed := waitHR(t, ns, "app", metav1.ConditionTrue, kustomizev1.RenderSucceededReason)
	g.Expect(fixed.Status.RenderedArtifact).To(Equal(good.Status.RenderedArtifact))
	g.Expect(hrRendered(fixed).Message).To(Equal(`serving the render of chart fragile version "1.0.0": its chart, values and spec are unchanged`))
	g.Expect(helmRec.Renders(key)).To(Equal(renders))
	g.Eventually(func() []events.Event { return published.of(ns, "app", kustomizev1.RenderedReason) }, timeout, poll).
		Should(HaveLen(announced + 1))
}

// Deleting the HelmRelease deletes its HelmChart and rendered artifacts;
// replacing spec.chart by a chartRef deletes the HelmChart too.
func TestHelmReleaseDeletionRemovesHelmChart(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t)
	hr := helmRelease(t, ns, "app", nil)
	chartName := ns + "-app"
	g.Eventually(func(g Gomega) { getChart(g, ns, chartName) }, timeout, poll).Should(Succeed())
	setChartArtifact(t, ns, chartName, "1.0.0", valuesChart(t, "1.0.0", "greeting: hi\n"))
	a := waitHR(t, ns, "app", metav1.ConditionTrue, kustomizev1.RenderSucceededReason).Status.RenderedArtifact
	g.Expect(storage.Exists(a)).To(BeTrue())

	g.Expect(k8s.Delete(ctx, hr)).To(Succeed())
	g.Eventually(func(g Gomega) bool { return chartGone(g, ns, chartName) }, timeout, poll).Should(BeTrue(), "the HelmChart goes with its HelmRelease")
	g.Eventually(func() error {
		_, err := os.Stat(storage.LocalPath(a.Path))
		return err
	}, timeout, poll).Should(MatchError(os.ErrNotExist), "the rendered artifact is removed")
	g.Eventually(func() bool {
		return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(hr), &helmv2.HelmRelease{}))
	}, timeout, poll).Should(BeTrue(), "the finalizer is released")

	// spec.chart → chartRef: the HelmChart it created goes.
	helmRelease(t, ns, "switch", nil)
	switchChart := ns + "-switch"
	g.Eventually(func(g Gomega) { getChart(g, ns, switchChart) }, timeout, poll).Should(Succeed())
	helmChartObject(t, ns, "other")
	setChartArtifact(t, ns, "other", "3.0.0", valuesChart(t, "3.0.0", "greeting: other\n"))
	updateHR(t, ns, "switch", func(s *helmv2.HelmReleaseSpec) {
		s.Chart = nil
		s.ChartRef = &helmv2.CrossNamespaceSourceReference{Kind: sourcev1.HelmChartKind, Name: "other"}
	})
	got, _ := waitHRValues(t, ns, "switch", func(g Gomega, v map[string]any, _ string) {
		g.Expect(v).To(HaveKeyWithValue("greeting", "other"))
	})
	g.Expect(got.Status.HelmChart).To(Equal(ns + "/other"))
	g.Eventually(func(g Gomega) bool { return chartGone(g, ns, switchChart) }, timeout, poll).Should(BeTrue())
	g.Expect(chartGone(g, ns, "other")).To(BeFalse())
}

// A HelmChart of the name render-controller would create that is not this
// HelmRelease's is neither taken over nor deleted.
func TestHelmReleaseForeignHelmChartRefused(t *testing.T) {
	g := NewWithT(t)
	ns := namespace(t)
	helmChartObject(t, ns, ns+"-app")
	hr := helmRelease(t, ns, "app", nil)
	failed := waitHR(t, ns, "app", metav1.ConditionFalse, helmv2.HelmChartFailedReason)
	g.Expect(hrRendered(failed).Message).To(ContainSubstring(fmt.Sprintf("HelmChart %s/%s-app exists and does not belong to this HelmRelease", ns, ns)))
	g.Expect(failed.Status.HelmChart).To(BeEmpty(), "not the HelmChart rendered")
	hc := getChart(g, ns, ns+"-app")
	g.Expect(hc.Labels).NotTo(HaveKey(helmv2.NameLabel))
	g.Expect(hc.Spec.Version).To(Equal("*"), "the spec is left as it was")

	g.Expect(k8s.Delete(context.Background(), hr)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(k8s.Get(context.Background(), client.ObjectKeyFromObject(hr), &helmv2.HelmRelease{}))
	}, timeout, poll).Should(BeTrue())
	g.Expect(chartGone(g, ns, ns+"-app")).To(BeFalse(), "someone else's HelmChart is not deleted")
}

// --no-cross-namespace-refs refuses a chart source or a chartRef in
// another namespace, and creates nothing there.
func TestHelmReleaseCrossNamespaceRefused(t *testing.T) {
	g := NewWithT(t)
	ns, other := namespace(t), namespace(t)
	helmRelease(t, ns, "spec", func(s *helmv2.HelmReleaseSpec) { s.Chart.Spec.SourceRef.Namespace = other })
	hr := waitHR(t, ns, "spec", metav1.ConditionFalse, meta.InvalidSpecReason)
	g.Expect(hrRendered(hr).Message).To(Equal(fmt.Sprintf(
		"cross-namespace references are not allowed: spec.chart.spec.sourceRef names namespace %s, outside namespace %s", other, ns)))
	g.Expect(chartGone(g, other, ns+"-spec")).To(BeTrue())
	g.Expect(hr.Status.RenderedArtifact).To(BeNil())

	helmChartObject(t, other, "chart")
	setChartArtifact(t, other, "chart", "1.0.0", valuesChart(t, "1.0.0", "a: b\n"))
	helmRelease(t, ns, "ref", func(s *helmv2.HelmReleaseSpec) {
		s.Chart = nil
		s.ChartRef = &helmv2.CrossNamespaceSourceReference{Kind: sourcev1.HelmChartKind, Name: "chart", Namespace: other}
	})
	hr = waitHR(t, ns, "ref", metav1.ConditionFalse, meta.InvalidSpecReason)
	g.Expect(hrRendered(hr).Message).To(ContainSubstring("spec.chartRef names namespace " + other))
	g.Expect(hr.Status.RenderedArtifact).To(BeNil())
}

// A suspended HelmRelease is not reconciled: no HelmChart, no render.
func TestHelmReleaseSuspended(t *testing.T) {
	g := NewWithT(t)
	ns := namespace(t)
	helmRelease(t, ns, "app", func(s *helmv2.HelmReleaseSpec) { s.Suspend = true })
	key := types.NamespacedName{Namespace: ns, Name: "app"}
	g.Eventually(func() int64 { return helmRec.count(key).reconciles.Load() }, timeout, poll).Should(BeNumerically(">", 0))
	g.Consistently(func(g Gomega) {
		g.Expect(chartGone(g, ns, ns+"-app")).To(BeTrue())
		g.Expect(hrRendered(getHR(g, ns, "app"))).To(BeNil())
	}, time.Second, poll).Should(Succeed())

	updateHR(t, ns, "app", func(s *helmv2.HelmReleaseSpec) { s.Suspend = false })
	g.Eventually(func(g Gomega) { getChart(g, ns, ns+"-app") }, timeout, poll).Should(Succeed())
}

// chartCRD is a file of a chart's crds/ folder: the namespaced
// CustomResourceDefinition of kind (singular its lower-case name) in group,
// v1, any content accepted.
func chartCRD(group, singular, kind string) string {
	return fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: %[2]ss.%[1]s
spec:
  group: %[1]s
  scope: Namespaced
  names: {plural: %[2]ss, singular: %[2]s, kind: %[3]s, listKind: %[3]sList}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`, group, singular, kind)
}

// The install render takes install.crds (Create by default: the CRDs of
// crds/ rendered to be created only when missing); once a release is
// deployed, renders take upgrade.crds (Skip by default). releaseName and
// postRenderers reach the render.
func TestHelmReleaseCRDPolicyAndPostRenderers(t *testing.T) {
	g := NewWithT(t)
	ns := namespace(t)
	group := strings.ReplaceAll(ns, "-", "") + ".crds.plumb.dev"
	helmChartObject(t, ns, "chart")
	setChartArtifact(t, ns, "chart", "1.0.0", testChart(t, "withcrds", "1.0.0", map[string]string{
		"crds/gadget.yaml": chartCRD(group, "gadget", "Gadget"),
		"templates/deploy.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: nginx:1.0
`,
	}))
	helmRelease(t, ns, "app", func(s *helmv2.HelmReleaseSpec) {
		s.Chart = nil
		s.ChartRef = &helmv2.CrossNamespaceSourceReference{Kind: sourcev1.HelmChartKind, Name: "chart"}
		s.ReleaseName = "custom-name"
		s.PostRenderers = []helmv2.PostRenderer{{Kustomize: &helmv2.Kustomize{
			Images: []kustomizev1.Image{{Name: "nginx", NewTag: "2.0"}},
		}}}
	})
	hr := waitHR(t, ns, "app", metav1.ConditionTrue, kustomizev1.RenderSucceededReason)
	body := download(t, hr.Status.RenderedArtifact)
	g.Expect(body).To(ContainSubstring("name: gadgets." + group))
	g.Expect(body).To(ContainSubstring(kustomizev1.SSAAnnotation + ": " + kustomizev1.IfNotPresentValue))
	g.Expect(body).To(ContainSubstring("name: custom-name"))
	g.Expect(body).To(ContainSubstring("image: nginx:2.0"), "the post-renderer's image")

	// Deployed, then new values: the upgrade's default policy skips crds/.
	markDeployed(t, ns, "app")
	updateHR(t, ns, "app", func(s *helmv2.HelmReleaseSpec) { s.Values = jsonValues(t, map[string]any{"any": "change"}) })
	g.Eventually(func(g Gomega) {
		hr := getHR(g, ns, "app")
		g.Expect(hrRendered(hr).Status).To(Equal(metav1.ConditionTrue))
		body := download(t, hr.Status.RenderedArtifact)
		g.Expect(body).NotTo(ContainSubstring("gadgets." + group))
		g.Expect(body).To(ContainSubstring("image: nginx:2.0"))
	}, timeout, poll).Should(Succeed())

	// upgrade.crds CreateReplace renders them plainly.
	updateHR(t, ns, "app", func(s *helmv2.HelmReleaseSpec) { s.Upgrade = &helmv2.Upgrade{CRDs: helmv2.CRDsCreateReplace} })
	g.Eventually(func(g Gomega) {
		hr := getHR(g, ns, "app")
		c := hrRendered(hr)
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(c.ObservedGeneration).To(Equal(hr.Generation))
		body := download(t, hr.Status.RenderedArtifact)
		g.Expect(body).To(ContainSubstring("name: gadgets." + group))
		g.Expect(body).NotTo(ContainSubstring(kustomizev1.SSAAnnotation))
	}, timeout, poll).Should(Succeed())
}

// The move from install to upgrade alone renders nothing — not when
// sync-controller marks the install deployed, not at the next reconcile,
// not after a restart — since the install render of a chart with crds/ or
// .Release.IsInstall would differ and be released again as an upgrade.
// The next render made for another reason (new values) is an upgrade.
func TestHelmReleaseInstallToUpgradeDoesNotRerender(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t)
	group := strings.ReplaceAll(ns, "-", "") + ".upgrade.plumb.dev"
	helmChartObject(t, ns, "chart")
	setChartArtifact(t, ns, "chart", "1.0.0", testChart(t, "values", "1.0.0", map[string]string{
		"values.yaml":     "greeting: chart\n",
		"crds/thing.yaml": chartCRD(group, "thing", "Thing"),
		"templates/values.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-values
data:
  values: {{ toJson .Values | quote }}
  install: {{ .Release.IsInstall | quote }}
  upgrade: {{ .Release.IsUpgrade | quote }}
`,
	}))
	helmRelease(t, ns, "app", func(s *helmv2.HelmReleaseSpec) {
		s.Chart = nil
		s.ChartRef = &helmv2.CrossNamespaceSourceReference{Kind: sourcev1.HelmChartKind, Name: "chart"}
	})
	installed, body := waitHRValues(t, ns, "app", func(g Gomega, _ map[string]any, install string) {
		g.Expect(install).To(Equal("true"))
	})
	g.Expect(body).To(ContainSubstring("name: things." + group))
	g.Expect(body).To(ContainSubstring(kustomizev1.SSAAnnotation + ": " + kustomizev1.IfNotPresentValue))
	a := installed.Status.RenderedArtifact
	g.Expect(a.Metadata).To(HaveKeyWithValue(helmv2.ArtifactInputsDigestKey, HavePrefix("sha256:")))
	key := types.NamespacedName{Namespace: ns, Name: "app"}
	renders := settledRenders(t, key)
	g.Expect(published.of(ns, "app", kustomizev1.RenderedReason)).To(HaveLen(1))

	// unchanged asserts that the install's render is still the one served
	// and announced.
	unchanged := func(g Gomega) {
		hr := getHR(g, ns, "app")
		g.Expect(hr.Status.RenderedArtifact).To(Equal(a))
		g.Expect(hrRendered(hr).Status).To(Equal(metav1.ConditionTrue))
		g.Expect(published.of(ns, "app", kustomizev1.RenderedReason)).To(HaveLen(1), "no new Rendered event")
		g.Expect(storage.Verify(a)).To(Succeed())
	}

	// sync-controller marks the install deployed, then a reconcile is
	// requested: nothing is rendered.
	markDeployed(t, ns, "app")
	reconciles := helmRec.count(key).reconciles.Load()
	requestHRReconcile(t, ns, "app")
	g.Eventually(func() int64 { return helmRec.count(key).reconciles.Load() }, timeout, poll).Should(BeNumerically(">", reconciles))
	g.Consistently(func(g Gomega) {
		unchanged(g)
		g.Expect(helmRec.Renders(key)).To(Equal(renders))
	}, time.Second, poll).Should(Succeed())

	// A spec change that is no input of the render (the interval) renders
	// nothing either; Rendered speaks for the new generation.
	updateHR(t, ns, "app", func(s *helmv2.HelmReleaseSpec) { s.Interval = metav1.Duration{Duration: 2 * time.Hour} })
	waitHR(t, ns, "app", metav1.ConditionTrue, kustomizev1.RenderSucceededReason)
	g.Expect(helmRec.Renders(key)).To(Equal(renders))
	unchanged(g)

	// A restart: a new reconciler, with nothing in memory, over the same
	// storage, reconciles the deployed HelmRelease and renders nothing.
	disc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	g.Expect(err).NotTo(HaveOccurred())
	fresh := &HelmReleaseReconciler{
		Client:       k8s,
		Storage:      storage,
		Events:       helmRec.Events,
		Metrics:      NewHelmReleaseMetrics(prometheus.NewRegistry()),
		Capabilities: &Capabilities{Discovery: disc, TTL: time.Hour},
		HelmLimits:   testHelmLimits,
		RenderLimits: testRenderLimits,
	}
	setUpWithoutManager(t, fresh)
	_, err = fresh.Reconcile(ctx, ctrl.Request{NamespacedName: key})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(fresh.Renders(key)).To(BeZero(), "the restarted controller renders nothing")
	g.Expect(fresh.count(key).reconciles.Load()).To(Equal(int64(1)))
	unchanged(g)

	// New values: a render for another reason, which is an upgrade —
	// .Release.IsUpgrade, and upgrade.crds (Skip) leaves crds/ out.
	updateHR(t, ns, "app", func(s *helmv2.HelmReleaseSpec) { s.Values = jsonValues(t, map[string]any{"greeting": "upgraded"}) })
	upgraded, body := waitHRValues(t, ns, "app", func(g Gomega, v map[string]any, install string) {
		g.Expect(v).To(HaveKeyWithValue("greeting", "upgraded"))
		g.Expect(install).To(Equal("false"))
	})
	g.Expect(body).To(ContainSubstring(`upgrade: "true"`))
	g.Expect(body).NotTo(ContainSubstring("things." + group))
	g.Expect(upgraded.Status.RenderedArtifact.Digest).NotTo(Equal(a.Digest))
	g.Expect(upgraded.Status.RenderedArtifact.Metadata[helmv2.ArtifactInputsDigestKey]).
		NotTo(Equal(a.Metadata[helmv2.ArtifactInputsDigestKey]))
	g.Eventually(func() []events.Event { return published.of(ns, "app", kustomizev1.RenderedReason) }, timeout, poll).
		Should(HaveLen(2), "the upgrade's render is announced once")
}

// settledRenders returns the count of renders of key once it stops moving:
// a reconcile queued before the first render's status reached the cache
// (by the HelmChart or ConfigMap watch) renders the same inputs once more,
// which is harmless (the same digest) but must not be counted against what
// a test does next.
func settledRenders(t *testing.T, key types.NamespacedName) int64 {
	t.Helper()
	var n int64
	NewWithT(t).Eventually(func() bool {
		before := helmRec.Renders(key)
		time.Sleep(3 * poll)
		n = helmRec.Renders(key)
		return n == before
	}, timeout, poll).Should(BeTrue(), "renders of %s did not settle", key)
	return n
}

// Values from a Secret never reach the status, events or logs through a
// render error: a schema failure says where and which keyword, and a
// template's fail quoting a value is redacted.
func TestHelmReleaseRenderErrorsRedactSecrets(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t)
	const password = "Hunter2-S3cret!"
	g.Expect(k8s.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "creds"},
		StringData: map[string]string{"values.yaml": "password: " + password + "\n", "token": "tok-" + password},
	})).To(Succeed())
	helmChartObject(t, ns, "chart")
	setChartArtifact(t, ns, "chart", "1.0.0", testChart(t, "leaky", "1.0.0", map[string]string{
		"values.schema.json": `{"type": "object", "properties": {"password": {"type": "string", "pattern": "^[a-z]+$"}}}`,
		"templates/cm.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n",
	}))
	helmRelease(t, ns, "app", func(s *helmv2.HelmReleaseSpec) {
		s.Chart = nil
		s.ChartRef = &helmv2.CrossNamespaceSourceReference{Kind: sourcev1.HelmChartKind, Name: "chart"}
		s.ValuesFrom = []helmv2.ValuesReference{{Kind: "Secret", Name: "creds"}}
	})
	failed := waitHR(t, ns, "app", metav1.ConditionFalse, kustomizev1.BuildFailedReason)
	g.Expect(hrRendered(failed).Message).To(ContainSubstring("at '/password': pattern"))
	g.Expect(hrRendered(failed).Message).NotTo(ContainSubstring(password))

	// A template's fail quoting the values, a targetPath's value among them.
	setChartArtifact(t, ns, "chart", "1.0.1", testChart(t, "leaky", "1.0.1", map[string]string{
		"templates/cm.yaml": "{{ fail (printf \"bad values %v %q\" .Values.password .Values.token) }}\n",
	}))
	updateHR(t, ns, "app", func(s *helmv2.HelmReleaseSpec) {
		s.ValuesFrom = append(s.ValuesFrom, helmv2.ValuesReference{Kind: "Secret", Name: "creds", ValuesKey: "token", TargetPath: "token"})
	})
	g.Eventually(func(g Gomega) {
		c := hrRendered(getHR(g, ns, "app"))
		g.Expect(c.Reason).To(Equal(kustomizev1.BuildFailedReason))
		g.Expect(c.Message).To(ContainSubstring("bad values <redacted>"))
	}, timeout, poll).Should(Succeed())
	g.Expect(hrRendered(getHR(g, ns, "app")).Message).NotTo(ContainSubstring("S3cret"))
	evs := published.all(ns, "app")
	g.Expect(evs).NotTo(BeEmpty())
	for _, e := range evs {
		g.Expect(e.Message).NotTo(ContainSubstring("S3cret"))
	}
}

// A HelmRelease's HelmChart is in the HelmRelease's shard, so that the
// same shard's source-controller builds it, unless the chart template
// names a shard of its own; it follows the HelmRelease to a new shard.
func TestHelmReleaseChartIsInTheHelmReleasesShard(t *testing.T) {
	g := NewWithT(t)
	ns := namespace(t)
	for name, tc := range map[string]struct {
		template map[string]string
		want     string
	}{
		"inherited":             {want: "shard1"},
		"named by the template": {template: map[string]string{meta.ShardKeyLabel: "shard3"}, want: "shard3"},
	} {
		hr := &helmv2.HelmRelease{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: strings.ReplaceAll(name, " ", "-"), Labels: map[string]string{meta.ShardKeyLabel: "shard1"}},
			Spec:       helmv2.HelmReleaseSpec{Chart: chartSpec(), Interval: metav1.Duration{Duration: time.Hour}},
		}
		if tc.template != nil {
			hr.Spec.Chart.ObjectMeta = &helmv2.HelmChartTemplateObjectMeta{Labels: tc.template}
		}
		g.Expect(k8s.Create(context.Background(), hr)).To(Succeed())
		g.Eventually(func(g Gomega) {
			g.Expect(getChart(g, ns, ns+"-"+hr.Name).Labels).To(HaveKeyWithValue(meta.ShardKeyLabel, tc.want))
		}, timeout, poll).Should(Succeed(), name)
	}

	// Moved to shard2: the shard that takes the HelmRelease relabels its
	// chart. (This suite's one instance sees the change as a new reconcile
	// request, as the new shard sees the HelmRelease appear.)
	hr := getHR(g, ns, "inherited")
	hr.Labels[meta.ShardKeyLabel] = "shard2"
	hr.Annotations = map[string]string{meta.ReconcileRequestAnnotation: "moved"}
	g.Expect(k8s.Update(context.Background(), hr)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(getChart(g, ns, ns+"-inherited").Labels).To(HaveKeyWithValue(meta.ShardKeyLabel, "shard2"))
	}, timeout, poll).Should(Succeed())
}
