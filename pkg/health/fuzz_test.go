package health

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// FuzzHPAConditionsAnnotation: the v1 HPA conditions annotation is JSON that
// anyone with write access to the object can set; reading it never panics
// and always gives a known status.
func FuzzHPAConditionsAnnotation(f *testing.F) {
	for _, s := range []string{
		`[{"type":"AbleToScale","status":"False","reason":"FailedGetScale"}]`,
		`[{"type":"ScalingActive","status":"False","reason":"ScalingDisabled"}]`,
		`[]`, `{}`, `[1,"x",null,{"type":5}]`, `[{"type":`, `null`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, ann string) {
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
			"metadata": map[string]any{"name": "h", "annotations": map[string]any{hpaConditionsAnnotation: ann}},
		}}
		r := Evaluate(obj)
		if _, ok := rank[r.Status]; !ok || r.Message == "" {
			t.Fatalf("annotation %q gave %v", ann, r)
		}
	})
}
