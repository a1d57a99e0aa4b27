package controller

import (
	"bytes"
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/testhelm"
)

// helmChartLayer is the media type of the chart layer the Helm SDK pushes.
const helmChartLayer = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"

// An OCIRepository of a chart pushed with the Helm SDK, as Flux's
// reference repository declares it for a HelmRelease's chartRef
// (layerSelector of Helm's chart media type, operation copy, ref.semver
// 1.x): the artifact is the chart's .tgz as pushed, its revision the tag
// and the manifest digest. With operation extract the artifact is the
// chart's folder, which the Helm SDK's loader reads as well.
func TestOCIRepositoryOfAHelmChart(t *testing.T) {
	g := NewWithT(t)
	reg := newRegistry(t, testhelm.RegistryOptions{})
	for _, v := range []string{"1.0.0", "1.4.0", "2.0.0"} {
		_, err := reg.Push(configMapChart("cert-manager", v))
		g.Expect(err).NotTo(HaveOccurred())
	}
	pushed := chartArchive(t, configMapChart("cert-manager", "1.4.0"))
	url := reg.URL() + "/cert-manager"
	ns := namespace(t)

	copied := newOCIRepository(ns, "cert-manager", url, &sourcev1.OCIRepositoryRef{SemVer: "1.x"})
	copied.Spec.LayerSelector = &sourcev1.OCILayerSelector{MediaType: helmChartLayer, Operation: sourcev1.OCILayerCopy}
	extracted := newOCIRepository(ns, "extracted", url, &sourcev1.OCIRepositoryRef{SemVer: "1.x"})
	extracted.Spec.LayerSelector = &sourcev1.OCILayerSelector{MediaType: helmChartLayer, Operation: sourcev1.OCILayerExtract}
	for _, o := range []*sourcev1.OCIRepository{copied, extracted} {
		g.Expect(k8s.Create(context.Background(), o)).To(Succeed())
		waitHelmCondition(t, o, func(g Gomega, ready *metav1.Condition) {
			g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), ready.Message)
		})
		g.Expect(o.Status.Artifact.Revision).To(MatchRegexp(`^1\.4\.0@sha256:[0-9a-f]{64}$`))
	}

	tgz := download(t, copied.Status.Artifact)
	g.Expect(tgz).To(Equal(pushed), "copy stores the chart layer unchanged")
	ch, err := loader.LoadArchive(bytes.NewReader(tgz))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ch.Metadata.Version).To(Equal("1.4.0"))

	tree := files(t, download(t, extracted.Status.Artifact))
	g.Expect(tree).To(HaveKey("cert-manager/Chart.yaml"))
	ch, err = loader.LoadArchive(bytes.NewReader(download(t, extracted.Status.Artifact)))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ch.Name()).To(Equal("cert-manager"))
	g.Expect(ch.Templates).To(HaveLen(1))
	g.Expect(strings.Split(copied.Status.Artifact.Revision, "@")[1]).To(Equal(strings.Split(extracted.Status.Artifact.Revision, "@")[1]))
}
