package controller

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	sourcev1 "plumb.dev/api/source/v1"
)

// install/upgrade.disableSchemaValidation: values that the chart's
// values.schema.json refuses are rendered when the action of the next
// sync (install while nothing is deployed, upgrade after) disables the
// check, and refused again when it does not.
func TestDisableSchemaValidationRendersValuesTheSchemaRefuses(t *testing.T) {
	g := NewWithT(t)
	ns := namespace(t)
	helmChartObject(t, ns, "chart")
	setChartArtifact(t, ns, "chart", "1.0.0", testChart(t, "strict", "1.0.0", map[string]string{
		"values.schema.json": `{"type": "object", "properties": {"replicas": {"type": "integer"}}}`,
		"templates/cm.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  replicas: {{ .Values.replicas | quote }}\n",
	}))
	helmRelease(t, ns, "app", func(s *helmv2.HelmReleaseSpec) {
		s.Chart = nil
		s.ChartRef = &helmv2.CrossNamespaceSourceReference{Kind: sourcev1.HelmChartKind, Name: "chart"}
		s.Values = jsonValues(t, map[string]any{"replicas": "many"})
	})
	refused := waitHR(t, ns, "app", metav1.ConditionFalse, kustomizev1.BuildFailedReason)
	g.Expect(hrRendered(refused).Message).To(ContainSubstring("at '/replicas': type"))

	// The install's switch.
	updateHR(t, ns, "app", func(s *helmv2.HelmReleaseSpec) {
		s.Install = &helmv2.Install{ActionSwitches: helmv2.ActionSwitches{DisableSchemaValidation: true}}
	})
	rendered := waitHR(t, ns, "app", metav1.ConditionTrue, kustomizev1.RenderSucceededReason)
	g.Expect(download(t, rendered.Status.RenderedArtifact)).To(ContainSubstring("replicas: many"))

	// Deployed, the next render is an upgrade's: upgrade's switch (unset)
	// holds, and the schema is checked again.
	markDeployed(t, ns, "app")
	updateHR(t, ns, "app", func(s *helmv2.HelmReleaseSpec) {
		s.Values = jsonValues(t, map[string]any{"replicas": "more"})
	})
	refused = waitHR(t, ns, "app", metav1.ConditionFalse, kustomizev1.BuildFailedReason)
	g.Expect(hrRendered(refused).Message).To(ContainSubstring("at '/replicas': type"))
	updateHR(t, ns, "app", func(s *helmv2.HelmReleaseSpec) {
		s.Upgrade = &helmv2.Upgrade{ActionSwitches: helmv2.ActionSwitches{DisableSchemaValidation: true}}
	})
	rendered = waitHR(t, ns, "app", metav1.ConditionTrue, kustomizev1.RenderSucceededReason)
	g.Expect(download(t, rendered.Status.RenderedArtifact)).To(ContainSubstring("replicas: more"))
}
