package controller

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	helmv2 "plumb.dev/api/helm/v2"
)

// TestTheChartsOCIDigestIsRecordedWithTheRelease: a chart from an OCI
// artifact (render-controller's oci-digest) is recorded as Flux records
// it: status.lastAttemptedRevisionDigest and the release's
// history[].ociDigest; a chart from a HelmChart after it has neither.
func TestTheChartsOCIDigestIsRecordedWithTheRelease(t *testing.T) {
	g := NewWithT(t)
	_, hr := newHelmRelease(t, nil)
	a := "sha256:" + strings.Repeat("a", 64)
	renderChart(t, hr, storageChart("1.0.0"), nil, map[string]string{
		helmv2.ArtifactChartVersionKey: "1.0.0+aaaaaaaaaaaa", helmv2.ArtifactOCIDigestKey: a,
	})
	got := waitReleaseReady(t, hr, "1.0.0+aaaaaaaaaaaa")
	g.Expect(got.Status.LastAttemptedRevisionDigest).To(Equal(a))
	g.Expect(got.Status.History).To(HaveLen(1))
	g.Expect(got.Status.History[0].OCIDigest).To(Equal(a))

	b := "sha256:" + strings.Repeat("b", 64)
	renderChart(t, hr, storageChart("1.0.0"), map[string]any{"greeting": "again"}, map[string]string{
		helmv2.ArtifactChartVersionKey: "1.0.0+bbbbbbbbbbbb", helmv2.ArtifactOCIDigestKey: b,
	})
	got = waitReleaseReady(t, hr, "1.0.0+bbbbbbbbbbbb")
	g.Expect(got.Status.LastAttemptedRevisionDigest).To(Equal(b))
	g.Expect(got.Status.History).To(HaveLen(2))
	g.Expect(got.Status.History[0].OCIDigest).To(Equal(b))
	g.Expect(got.Status.History[1].OCIDigest).To(Equal(a), "each release keeps its own")

	renderChart(t, hr, storageChart("2.0.0"), nil)
	got = waitReleaseReady(t, hr, "2.0.0")
	g.Expect(got.Status.LastAttemptedRevisionDigest).To(BeEmpty(), "a HelmChart's chart has no OCI digest")
	g.Expect(got.Status.History[0].OCIDigest).To(BeEmpty())
	g.Expect(got.Status.History[1].OCIDigest).To(Equal(b))
}
