package inspect_test

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/health"
	"plumb.dev/pkg/inspect"
)

func TestAppliedHealthJudgesByTheKustomizationsExprs(t *testing.T) {
	widget := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w", "namespace": "shop", "generation": int64(1)},
		"status":   map[string]any{"phase": "Failed"},
	}}
	ks := func(current, failed string) *inspect.Applied {
		return inspect.AppliedKustomization(&kustomizev1.Kustomization{Spec: kustomizev1.KustomizationSpec{
			HealthCheckExprs: []kustomizev1.CustomHealthCheck{{APIVersion: "example.com/v1", Kind: "Widget", Current: current, Failed: failed}},
		}})
	}
	for _, tc := range []struct {
		name    string
		applied *inspect.Applied
		want    health.Status
		message string
	}{
		{"the entry's failed holds", ks("status.phase == 'Running'", "status.phase == 'Failed'"), health.Degraded, "failed holds"},
		{"an entry that does not parse judges its kind Unknown", ks("status.phase ==", ""), health.Unknown, "does not parse"},
		{"a HelmRelease has no entries: pkg/health", inspect.AppliedHelmRelease(&helmv2.HelmRelease{}), health.Evaluate(widget).Status, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.applied.Health(widget)
			if got.Status != tc.want || !strings.Contains(got.Message, tc.message) {
				t.Errorf("got %s, want %s with a message containing %q", got, tc.want, tc.message)
			}
		})
	}
}
