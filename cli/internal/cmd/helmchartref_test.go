package cmd

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	sourcev1 "plumb.dev/api/source/v1"
)

// A HelmRelease whose chartRef is an OCIRepository: `get helmrelease`
// and `trace` name the OCIRepository as the chart's source, with its
// revision and URL, and look for no HelmChart.
func TestHelmReleaseFromAnOCIRepository(t *testing.T) {
	ctx, ns := newNamespace(t)
	g := NewWithT(t)
	repo := &sourcev1.OCIRepository{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "podinfo"},
		Spec: sourcev1.OCIRepositorySpec{URL: "oci://ghcr.io/stefanprodan/charts/podinfo", Interval: metav1.Duration{Duration: time.Minute},
			LayerSelector: &sourcev1.OCILayerSelector{MediaType: "application/vnd.cncf.helm.chart.content.v1.tar+gzip", Operation: sourcev1.OCILayerCopy}},
	}
	hr := &helmv2.HelmRelease{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: helmv2.HelmReleaseSpec{Interval: metav1.Duration{Duration: time.Minute},
			ChartRef: &helmv2.CrossNamespaceSourceReference{Kind: sourcev1.OCIRepositoryKind, Name: "podinfo"}},
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-settings",
		Labels: map[string]string{helmv2.NameLabel: "web", helmv2.NamespaceLabel: ns}}}
	create(ctx, t, repo, hr, cm)
	setStatus(ctx, t, repo, func(o *sourcev1.OCIRepository) { o.Status.Artifact = artifact("6.6.1@" + digestA) })
	setStatus(ctx, t, hr, func(o *helmv2.HelmRelease) {
		o.Status.LastAppliedRevision = "6.6.1+aaaaaaaaaaaa"
		o.Status.Inventory = &kustomizev1.Inventory{Entries: []kustomizev1.InventoryEntry{{Version: "v1", Kind: "ConfigMap", Namespace: ns, Name: "web-settings"}}}
	})

	r := plumb("get", "helmrelease", "web", "-n", ns)
	g.Expect(r.code).To(Equal(ExitOK), r.String())
	g.Expect(detailField(t, lines(r.out), "Chart")).To(Equal("OCIRepository/" + ns + "/podinfo at 6.6.1@" + digestA + ", oci://ghcr.io/stefanprodan/charts/podinfo"))

	r = plumb("trace", "configmap", "web-settings", "-n", ns)
	g.Expect(r.code).To(Equal(ExitOK), r.String())
	g.Expect(fieldOf(r.out, "Applied revision")).To(Equal("6.6.1+aaaaaaaaaaaa"))
	g.Expect(fieldOf(r.out, "OCIRepository")).To(Equal(ns + "/podinfo"))
	g.Expect(fieldOf(r.out, "URL")).To(Equal("oci://ghcr.io/stefanprodan/charts/podinfo"))
	g.Expect(fieldOf(r.out, "Revision")).To(Equal("6.6.1@" + digestA))
	g.Expect(r.out).NotTo(ContainSubstring("HelmChart"))
}
