package controller

import (
	"context"
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
)

// publishOCIChart serves data as the OCIRepository's artifact at revision
// (<tag>@sha256:<hex>) and marks its generation reconciled, as
// source-controller does for a layerSelector of Helm's chart media type.
func publishOCIChart(t *testing.T, ns, name, revision string, data []byte) *meta.Artifact {
	t.Helper()
	a := sources.serve(fmt.Sprintf("/ocirepository/%s/%s/%s.tgz", ns, name, revision[len(revision)-64:]), revision, data, "")
	updateStatus(t, types.NamespacedName{Namespace: ns, Name: name}, &sourcev1.OCIRepository{}, func(o *sourcev1.OCIRepository) {
		o.Status.Artifact = a
		o.Status.ObservedGeneration = o.Generation
	})
	return a
}

// renderedConfigMap returns the ConfigMap name of the rendered manifests.
func renderedConfigMap(g Gomega, manifests, name string) *corev1.ConfigMap {
	for _, doc := range strings.Split(manifests, "\n---\n") {
		var cm corev1.ConfigMap
		if err := yaml.Unmarshal([]byte(doc), &cm); err == nil && cm.Kind == "ConfigMap" && cm.Name == name {
			return &cm
		}
	}
	g.Expect(manifests).To(ContainSubstring("name: "+name), "ConfigMap %s not rendered", name)
	return nil
}

// spec.chartRef of kind OCIRepository, as Flux's reference repository
// writes it: the OCIRepository's artifact is the chart; the revision is
// the chart version with 12 hex digits of the manifest digest, so new
// content under the same tag is a new release; status.helmChart is empty
// and the HelmChart of the former spec.chart is deleted; commonMetadata
// labels the rendered objects; a tag naming another version than the
// chart's is refused.
func TestHelmReleaseChartRefOCIRepository(t *testing.T) {
	g := NewWithT(t)
	ns := namespace(t)
	ociRepo(t, ns, "values")

	// First from spec.chart: a HelmChart of its own.
	helmRelease(t, ns, "app", nil)
	g.Eventually(func(g Gomega) { getChart(g, ns, ns+"-app") }, timeout, poll).Should(Succeed())

	updateHR(t, ns, "app", func(s *helmv2.HelmReleaseSpec) {
		s.Chart = nil
		s.ChartRef = &helmv2.CrossNamespaceSourceReference{Kind: sourcev1.OCIRepositoryKind, Name: "values"}
		s.CommonMetadata = &kustomizev1.CommonMetadata{Labels: map[string]string{"team": "platform"}}
	})
	hr := waitHR(t, ns, "app", metav1.ConditionFalse, meta.DependencyNotReadyReason)
	// source-controller does not run here: the OCIRepository is as it
	// was created.
	g.Expect(hrRendered(hr).Message).To(Equal(fmt.Sprintf("waiting for OCIRepository %s/values: source-controller has not reconciled generation 1 yet", ns)))
	g.Expect(hr.Status.HelmChart).To(BeEmpty())
	g.Eventually(func(g Gomega) bool { return chartGone(g, ns, ns+"-app") }, timeout, poll).Should(BeTrue(),
		"the HelmChart of the former spec.chart is deleted")

	publishOCIChart(t, ns, "values", "1.2.0@sha256:"+hex64('a'), valuesChart(t, "1.2.0", "greeting: oci\n"))
	got, body := waitHRValues(t, ns, "app", func(g Gomega, v map[string]any, _ string) {
		g.Expect(v).To(HaveKeyWithValue("greeting", "oci"))
	})
	g.Expect(got.Status.RenderedArtifact.Revision).To(Equal("1.2.0+aaaaaaaaaaaa"))
	g.Expect(got.Status.RenderedArtifact.Metadata).To(HaveKeyWithValue(helmv2.ArtifactChartVersionKey, "1.2.0+aaaaaaaaaaaa"))
	g.Expect(got.Status.RenderedArtifact.Metadata).To(HaveKeyWithValue(helmv2.ArtifactOCIDigestKey, "sha256:"+hex64('a')))
	g.Expect(renderedConfigMap(g, body, "app-values").Labels).To(HaveKeyWithValue("team", "platform"))

	// The same version pushed again with other content: a new release.
	publishOCIChart(t, ns, "values", "1.2.0@sha256:"+hex64('b'), valuesChart(t, "1.2.0", "greeting: repushed\n"))
	got, _ = waitHRValues(t, ns, "app", func(g Gomega, v map[string]any, _ string) {
		g.Expect(v).To(HaveKeyWithValue("greeting", "repushed"))
	})
	g.Expect(got.Status.RenderedArtifact.Revision).To(Equal("1.2.0+bbbbbbbbbbbb"))
	g.Expect(got.Status.RenderedArtifact.Metadata).To(HaveKeyWithValue(helmv2.ArtifactOCIDigestKey, "sha256:"+hex64('b')))

	// A tag that is another version than the chart's: refused, the last
	// good render kept.
	publishOCIChart(t, ns, "values", "9.9.9@sha256:"+hex64('c'), valuesChart(t, "1.2.0", "greeting: mislabelled\n"))
	hr = waitHR(t, ns, "app", metav1.ConditionFalse, meta.ArtifactFailedReason)
	g.Expect(hrRendered(hr).Message).To(ContainSubstring("the artifact's tag 9.9.9 does not match the chart's version 1.2.0"))
	g.Expect(hr.Status.RenderedArtifact.Revision).To(Equal("1.2.0+bbbbbbbbbbbb"))
}

// spec.chartRef of kind ExternalArtifact: the wait names the producer;
// an artifact holding the chart's folder (as an OCIRepository's extract
// operation stores it) renders; a revision that is a plain version is the
// chart version, one with a digest gets the digest as build metadata.
func TestHelmReleaseChartRefExternalArtifact(t *testing.T) {
	g := NewWithT(t)
	ns := namespace(t)
	ea := &sourcev1.ExternalArtifact{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "chart"},
		Spec: sourcev1.ExternalArtifactSpec{SourceRef: &sourcev1.ExternalArtifactSourceReference{
			APIVersion: "example.com/v1", Kind: "ChartBuilder", Name: "builder",
		}},
	}
	g.Expect(k8s.Create(context.Background(), ea)).To(Succeed())
	helmRelease(t, ns, "app", func(s *helmv2.HelmReleaseSpec) {
		s.Chart = nil
		s.ChartRef = &helmv2.CrossNamespaceSourceReference{Kind: sourcev1.ExternalArtifactKind, Name: "chart"}
	})
	hr := waitHR(t, ns, "app", metav1.ConditionFalse, meta.DependencyNotReadyReason)
	g.Expect(hrRendered(hr).Message).To(Equal(fmt.Sprintf(
		"waiting for ExternalArtifact %s/chart: it has no artifact yet (produced from ChartBuilder %s/builder)", ns, ns)))

	folder := func(greeting string) map[string]string {
		return map[string]string{
			"values/Chart.yaml":  "apiVersion: v2\nname: values\nversion: 3.0.0\n",
			"values/values.yaml": "greeting: " + greeting + "\n",
			"values/templates/values.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-values
data:
  values: {{ toJson .Values | quote }}
  install: {{ .Release.IsInstall | quote }}
`,
		}
	}
	a := sources.serve(fmt.Sprintf("/bundle/%s/chart/one.tar.gz", ns), "3.0.0", packTree(t, folder("folder")), "")
	updateStatus(t, types.NamespacedName{Namespace: ns, Name: "chart"}, &sourcev1.ExternalArtifact{}, func(o *sourcev1.ExternalArtifact) { o.Status.Artifact = a })
	got, _ := waitHRValues(t, ns, "app", func(g Gomega, v map[string]any, _ string) {
		g.Expect(v).To(HaveKeyWithValue("greeting", "folder"))
	})
	g.Expect(got.Status.RenderedArtifact.Revision).To(Equal("3.0.0"))
	g.Expect(got.Status.HelmChart).To(BeEmpty())

	a = sources.serve(fmt.Sprintf("/bundle/%s/chart/two.tar.gz", ns), "sha256:"+hex64('d'), packTree(t, folder("digest")), "")
	updateStatus(t, types.NamespacedName{Namespace: ns, Name: "chart"}, &sourcev1.ExternalArtifact{}, func(o *sourcev1.ExternalArtifact) { o.Status.Artifact = a })
	got, _ = waitHRValues(t, ns, "app", func(g Gomega, v map[string]any, _ string) {
		g.Expect(v).To(HaveKeyWithValue("greeting", "digest"))
	})
	g.Expect(got.Status.RenderedArtifact.Revision).To(Equal("3.0.0+dddddddddddd"))
}

func TestChartRevision(t *testing.T) {
	digest := "sha256:0cc9a8446c95009ef382f5eade883a67c257f77d50f84e78ecef2aac9428d1e5"
	for _, tc := range []struct {
		kind, revision, version string
		want, wantDigest, err   string
	}{
		{kind: sourcev1.HelmChartKind, revision: "6.6.1", version: "6.6.1", want: "6.6.1"},
		{kind: sourcev1.OCIRepositoryKind, revision: "6.6.1@" + digest, version: "6.6.1", want: "6.6.1+0cc9a8446c95", wantDigest: digest},
		{kind: sourcev1.OCIRepositoryKind, revision: "v6.6.1@" + digest, version: "6.6.1", want: "6.6.1+0cc9a8446c95", wantDigest: digest},
		// Helm pushes 1.0.0+build under the tag 1.0.0_build; the
		// digest replaces the build metadata.
		{kind: sourcev1.OCIRepositoryKind, revision: "1.0.0_build@" + digest, version: "1.0.0+build", want: "1.0.0+0cc9a8446c95", wantDigest: digest},
		{kind: sourcev1.OCIRepositoryKind, revision: "latest@" + digest, version: "6.6.1", want: "6.6.1+0cc9a8446c95", wantDigest: digest},
		{kind: sourcev1.OCIRepositoryKind, revision: digest, version: "6.6.1", want: "6.6.1+0cc9a8446c95", wantDigest: digest},
		{kind: sourcev1.OCIRepositoryKind, revision: "6.6.2@" + digest, version: "6.6.1", err: "the artifact's tag 6.6.2 does not match the chart's version 6.6.1"},
		{kind: sourcev1.OCIRepositoryKind, revision: "6.6.1", version: "6.6.1", err: "holds no digest"},
		{kind: sourcev1.ExternalArtifactKind, revision: "6.6.1", version: "6.6.1", want: "6.6.1"},
		{kind: sourcev1.ExternalArtifactKind, revision: digest, version: "6.6.1", want: "6.6.1+0cc9a8446c95", wantDigest: digest},
	} {
		got, gotDigest, err := chartRevision(tc.kind, tc.revision, tc.version)
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s %s: error %v, want %q", tc.kind, tc.revision, err, tc.err)
			}
		case err != nil:
			t.Errorf("%s %s: %v", tc.kind, tc.revision, err)
		case got != tc.want || gotDigest != tc.wantDigest:
			t.Errorf("%s %s: %q %q, want %q %q", tc.kind, tc.revision, got, gotDigest, tc.want, tc.wantDigest)
		}
	}
}
