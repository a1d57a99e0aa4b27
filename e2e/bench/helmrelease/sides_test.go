package main

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// release is a HelmRelease of generation 2 as the API server returns it,
// with the given status.
func release(status map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"status": status}}
	u.SetGeneration(2)
	return u
}

func readyCond(status string, gen int64) map[string]any {
	return map[string]any{"type": "Ready", "status": status, "observedGeneration": gen, "reason": "UpgradeSucceeded"}
}

func TestAReleaseHasCaughtUpOnlyWhenReadyAtItsGenerationWithADeployedRelease(t *testing.T) {
	g := NewWithT(t)
	deployed := []any{map[string]any{"status": "deployed", "configDigest": "sha256:new"}, map[string]any{"status": "superseded", "configDigest": "sha256:old"}}
	g.Expect(released(release(map[string]any{"observedGeneration": int64(2), "conditions": []any{readyCond("True", 2)}, "history": deployed}))).To(BeTrue())
	g.Expect(newest(release(map[string]any{"history": deployed}), "configDigest")).To(Equal("sha256:new"), "the newest release is history's first entry")

	g.Expect(released(release(map[string]any{"observedGeneration": int64(1), "conditions": []any{readyCond("True", 2)}, "history": deployed}))).
		To(BeFalse(), "the status observes an older generation")
	g.Expect(released(release(map[string]any{"observedGeneration": int64(2), "conditions": []any{readyCond("True", 1)}, "history": deployed}))).
		To(BeFalse(), "Ready speaks of an older generation")
	g.Expect(released(release(map[string]any{"observedGeneration": int64(2), "conditions": []any{readyCond("False", 2)}, "history": deployed}))).
		To(BeFalse(), "not Ready")
	failed := []any{map[string]any{"status": "failed"}}
	g.Expect(released(release(map[string]any{"observedGeneration": int64(2), "conditions": []any{readyCond("True", 2)}, "history": failed}))).
		To(BeFalse(), "the newest release failed")
	g.Expect(released(release(map[string]any{"observedGeneration": int64(2), "conditions": []any{readyCond("True", 2)}}))).
		To(BeFalse(), "no release yet")
	noGen := map[string]any{"type": "Ready", "status": "True"}
	g.Expect(released(release(map[string]any{"observedGeneration": int64(2), "conditions": []any{noGen}, "history": deployed}))).
		To(BeTrue(), "a Ready condition without observedGeneration is read at the status's")
}

func TestBothSidesWriteTheSameHelmReleaseButForTheirChartRef(t *testing.T) {
	g := NewWithT(t)
	p, f := plumbSide.helmRelease(7, 0), fluxSide.helmRelease(7, 0)
	g.Expect(p.GetName()).To(Equal("app-0007"))
	g.Expect(p.GetNamespace()).NotTo(Equal(f.GetNamespace()), "each side in its own namespaces")
	pSpec, fSpec := p.Object["spec"].(map[string]any), f.Object["spec"].(map[string]any)
	g.Expect(pSpec["targetNamespace"]).To(Equal("plumb-0007"))
	g.Expect(fSpec["targetNamespace"]).To(Equal("flux-0007"))
	for _, k := range []string{"interval", "releaseName", "values", "driftDetection"} {
		g.Expect(pSpec[k]).To(Equal(fSpec[k]), k)
	}
	g.Expect(fSpec["chartRef"]).To(HaveKeyWithValue("kind", "ExternalArtifact"))
	g.Expect(pSpec["chartRef"]).To(HaveKeyWithValue("kind", "HelmChart"))
}
