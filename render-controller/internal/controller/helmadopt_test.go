package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "plumb.dev/api/helm/v2"
	sourcev1 "plumb.dev/api/source/v1"
)

// A release adopted from Helm's storage (sync-controller records it in
// status.history with no digest of Plumb's) outgrows the install render
// made before the adoption was known: it is rendered once again, as the
// upgrade Helm would make — .Release.IsUpgrade, upgrade.crds (Skip, so no
// crds/), the revision after the adopted one — and not again after that.
func TestHelmReleaseAdoptedReleaseIsRenderedAgainAsAnUpgrade(t *testing.T) {
	g := NewWithT(t)
	ns := namespace(t)
	group := strings.ReplaceAll(ns, "-", "") + ".adopt.plumb.dev"
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
  revision: {{ .Release.Revision | quote }}
`,
	}))
	helmRelease(t, ns, "app", func(s *helmv2.HelmReleaseSpec) {
		s.Chart = nil
		s.ChartRef = &helmv2.CrossNamespaceSourceReference{Kind: sourcev1.HelmChartKind, Name: "chart"}
	})
	installed, body := waitHRValues(t, ns, "app", func(g Gomega, _ map[string]any, install string) {
		g.Expect(install).To(Equal("true"))
	})
	g.Expect(body).To(ContainSubstring(`revision: "1"`))
	g.Expect(body).To(ContainSubstring("name: things." + group))
	g.Expect(installed.Status.RenderedArtifact.Metadata).To(HaveKeyWithValue(helmv2.ArtifactReleaseActionKey, helmv2.ReleaseActionInstall))
	key := types.NamespacedName{Namespace: ns, Name: "app"}
	renders := settledRenders(t, key)

	// sync-controller adopts revision 3 of the helm CLI's release.
	live := getHR(g, ns, "app")
	patch := client.MergeFrom(live.DeepCopy())
	now := metav1.Now()
	live.Status.History = []helmv2.Snapshot{{
		Version: 3, Name: "app", Namespace: ns, ChartName: "values", ChartVersion: "0.9.0",
		ConfigDigest: "sha256:00", FirstDeployed: now, LastDeployed: now, Status: helmv2.ReleaseStatusDeployed,
	}}
	g.Expect(k8s.Status().Patch(context.Background(), live, patch)).To(Succeed())

	upgraded, body := waitHRValues(t, ns, "app", func(g Gomega, _ map[string]any, install string) {
		g.Expect(install).To(Equal("false"))
	})
	g.Expect(body).To(ContainSubstring(`revision: "4"`))
	g.Expect(body).NotTo(ContainSubstring("things." + group))
	g.Expect(upgraded.Status.RenderedArtifact.Metadata).To(HaveKeyWithValue(helmv2.ArtifactReleaseActionKey, helmv2.ReleaseActionUpgrade))
	g.Expect(upgraded.Status.RenderedArtifact.Metadata[helmv2.ArtifactInputsDigestKey]).
		To(Equal(installed.Status.RenderedArtifact.Metadata[helmv2.ArtifactInputsDigestKey]), "the same inputs, rendered for the upgrade")
	after := settledRenders(t, key)
	g.Expect(after).To(Equal(renders+1), "rendered once more, as the upgrade")

	// The upgrade render stays: a requested reconcile renders nothing.
	reconciles := helmRec.count(key).reconciles.Load()
	requestHRReconcile(t, ns, "app")
	g.Eventually(func() int64 { return helmRec.count(key).reconciles.Load() }, timeout, poll).Should(BeNumerically(">", reconciles))
	g.Consistently(func() int64 { return helmRec.Renders(key) }, time.Second, poll).Should(Equal(after))
}

func TestNextRevisionFollowsTheHistory(t *testing.T) {
	g := NewWithT(t)
	hr := &helmv2.HelmRelease{}
	g.Expect(nextRevision(hr)).To(Equal(1))
	hr.Status.History = []helmv2.Snapshot{{Version: 7, Status: helmv2.ReleaseStatusFailed}, {Version: 6, Status: helmv2.ReleaseStatusDeployed}}
	g.Expect(nextRevision(hr)).To(Equal(8))
}
