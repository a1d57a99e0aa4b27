package health

import (
	"encoding/json"
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

// FuzzPodProblem: a Pod's status is written by a kubelet, or by anyone who
// may update pods/status; explaining it never panics, and what it copies
// from the status is bounded (maxPodText per copied message).
func FuzzPodProblem(f *testing.F) {
	for _, s := range []string{
		`{"status":{"phase":"Running","conditions":[{"type":"Ready","status":"False","reason":"ContainersNotReady"}],"containerStatuses":[{"name":"web","state":{"running":{}}}]},"spec":{"containers":[{"name":"web","readinessProbe":{}}]}}`,
		`{"status":{"containerStatuses":[{"name":"web","restartCount":"x","state":{"waiting":{"reason":"CrashLoopBackOff"}},"lastState":{"terminated":{"exitCode":1e300}}}]}}`,
		`{"status":{"phase":"Failed","message":5}}`, `{"status":[]}`, `{}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		var m map[string]any
		if json.Unmarshal([]byte(doc), &m) != nil {
			return
		}
		why := explainPods([]unstructured.Unstructured{{Object: m}, {Object: m}})
		if len(why) > 8*maxPodText+len(doc) {
			t.Fatalf("%d bytes from a %d-byte pod", len(why), len(doc))
		}
	})
}
