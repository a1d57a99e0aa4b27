package health

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

const (
	expectAnnotation  = "test.plumb.dev/expect"
	messageAnnotation = "test.plumb.dev/message"
	// argoCDAnnotation is what Argo CD's built-in check decides for the
	// case; differsAnnotation says why Plumb decides otherwise (see
	// docs/design/health.md).
	argoCDAnnotation  = "test.plumb.dev/argocd"
	differsAnnotation = "test.plumb.dev/differs"
)

// argoCDKinds are the kinds Argo CD has a built-in health check for.
var argoCDKinds = []string{
	"apps/Deployment", "apps/StatefulSet", "apps/DaemonSet", "apps/ReplicaSet", "/Pod", "batch/Job",
	"/PersistentVolumeClaim", "/Service", "networking.k8s.io/Ingress", "autoscaling/HorizontalPodAutoscaler",
	"apiregistration.k8s.io/APIService", "apiextensions.k8s.io/CustomResourceDefinition",
	"argoproj.io/Rollout", "argoproj.io/Workflow",
}

// readCases decodes every document of every testdata/*.yaml file.
func readCases(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	files, err := filepath.Glob("testdata/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata: %v", err)
	}
	var out []*unstructured.Unstructured
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(fh, 4096)
		for {
			u := &unstructured.Unstructured{}
			if err := dec.Decode(u); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				t.Fatalf("%s: %v", f, err)
			}
			if len(u.Object) == 0 {
				continue
			}
			u.SetAnnotations(withSource(u.GetAnnotations(), filepath.Base(f)))
			out = append(out, u)
		}
		fh.Close()
	}
	return out
}

func withSource(a map[string]string, file string) map[string]string {
	if a == nil {
		a = map[string]string{}
	}
	a["test.plumb.dev/file"] = file
	return a
}

// TestEvaluateTestdata runs every case in testdata: the expected status and a
// substring of the message are annotations of the object itself.
func TestEvaluateTestdata(t *testing.T) {
	for _, obj := range readCases(t) {
		ann := obj.GetAnnotations()
		name := ann["test.plumb.dev/file"] + "/" + obj.GetKind() + "/" + obj.GetName()
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			want, ok := ann[expectAnnotation]
			g.Expect(ok).To(BeTrue(), "case lacks %s", expectAnnotation)
			got := Evaluate(obj)
			g.Expect(got.Status).To(Equal(Status(want)), "message: %s", got.Message)
			g.Expect(got.Message).NotTo(BeEmpty())
			if sub := ann[messageAnnotation]; sub != "" {
				g.Expect(got.Message).To(ContainSubstring(sub))
			}
		})
	}
}

// TestEveryRuleCovered makes sure each kind with a rule of its own has cases
// in testdata, and lists the statuses each rule's cases reach.
func TestEveryRuleCovered(t *testing.T) {
	g := NewWithT(t)
	seen := map[string]map[Status]bool{}
	for _, obj := range readCases(t) {
		gvk := obj.GroupVersionKind()
		key := gvk.Group + "/" + gvk.Kind
		if seen[key] == nil {
			seen[key] = map[Status]bool{}
		}
		seen[key][Status(obj.GetAnnotations()[expectAnnotation])] = true
	}
	for key := range checkers {
		if strings.HasPrefix(key, "extensions/") {
			continue
		}
		g.Expect(seen).To(HaveKey(key), "no testdata case for %s", key)
		if key == "/Service" || key == "/Namespace" || key == "batch/CronJob" {
			continue
		}
		g.Expect(len(seen[key])).To(BeNumerically(">=", 2), "%s needs cases for more than one status", key)
	}
}

// TestArgoCDAgreement: every case that states Argo CD's decision either
// agrees with it or says why Plumb differs, and every kind Argo CD has a
// rule for has such cases.
func TestArgoCDAgreement(t *testing.T) {
	stated := map[string]int{}
	for _, obj := range readCases(t) {
		ann := obj.GetAnnotations()
		argo, ok := ann[argoCDAnnotation]
		if !ok {
			continue
		}
		gvk := obj.GroupVersionKind()
		stated[gvk.Group+"/"+gvk.Kind]++
		name := ann["test.plumb.dev/file"] + "/" + obj.GetKind() + "/" + obj.GetName()
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(rank).To(HaveKey(Status(argo)), "%s is not a status", argoCDAnnotation)
			if argo == ann[expectAnnotation] {
				g.Expect(ann).NotTo(HaveKey(differsAnnotation), "agrees with Argo CD but says it differs")
			} else {
				g.Expect(ann[differsAnnotation]).NotTo(BeEmpty(), "Argo CD decides %s: the case must say why Plumb differs", argo)
			}
		})
	}
	for _, key := range argoCDKinds {
		g := NewWithT(t)
		g.Expect(stated[key]).To(BeNumerically(">=", 2), "%s needs cases stating Argo CD's decision", key)
	}
}

// TestEvaluateOddStatus: branches no controller's ordinary status reaches
// (a phase a newer API may add, a field a controller left out) still give a
// status and a message.
func TestEvaluateOddStatus(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       Result
	}{
		{"pod phase not known", `{apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {restartPolicy: Always}, status: {phase: Hibernating}}`,
			Result{Status: Unknown, Message: `pod phase "Hibernating"`}},
		{"claim phase not known", `{apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: c}, status: {phase: Resizing}}`,
			Result{Status: Unknown, Message: `claim phase "Resizing"`}},
		{"restarted container without exit code", `{apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {restartPolicy: Always},
			status: {phase: Running, containerStatuses: [{name: app, lastState: {terminated: {reason: Error}}}]}}`,
			Result{Status: Degraded, Message: "pod running but not ready, container app restarted"}},
		{"crash loop without last state", `{apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {restartPolicy: Always},
			status: {phase: Running, containerStatuses: [{name: app, state: {waiting: {reason: CrashLoopBackOff}}}]}}`,
			Result{Status: Degraded, Message: "container app: CrashLoopBackOff"}},
		{"failed pod whose containers never ran", `{apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {restartPolicy: Never},
			status: {phase: Failed, reason: UnexpectedAdmissionError, containerStatuses: [{name: app, state: {waiting: {reason: ContainerCreating}}}]}}`,
			Result{Status: Degraded, Message: "UnexpectedAdmissionError"}},
		{"stateful set without revisions", `{apiVersion: apps/v1, kind: StatefulSet, metadata: {name: s, generation: 1},
			spec: {replicas: 1}, status: {observedGeneration: 1, readyReplicas: 1, updatedReplicas: 1}}`,
			Result{Status: Healthy, Message: "1 of 1 pods ready"}},
		{"rollout status without observedGeneration", `{apiVersion: argoproj.io/v1alpha1, kind: Rollout, metadata: {name: r, generation: 3},
			status: {phase: Progressing}}`,
			Result{Status: Progressing, Message: "rollout phase Progressing"}},
		{"rollout generation as a number", `{apiVersion: argoproj.io/v1alpha1, kind: Rollout, metadata: {name: r, generation: 3},
			status: {observedGeneration: 2, phase: Healthy}}`,
			Result{Status: Progressing, Message: "waiting for the Rollout controller to observe generation 3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			obj := &unstructured.Unstructured{}
			g.Expect(yaml.Unmarshal([]byte(tc.yaml), &obj.Object)).To(Succeed())
			g.Expect(Evaluate(obj)).To(Equal(tc.want))
		})
	}
}

func TestEvaluateMissing(t *testing.T) {
	g := NewWithT(t)
	g.Expect(Evaluate(nil).Status).To(Equal(Missing))
	g.Expect(Evaluate(&unstructured.Unstructured{}).Status).To(Equal(Missing))
}

func TestEvaluateDeletedWithoutFinalizers(t *testing.T) {
	g := NewWithT(t)
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "x", "deletionTimestamp": "2026-01-01T00:00:00Z"},
	}}
	g.Expect(Evaluate(obj)).To(Equal(Result{Status: Progressing, Message: "being deleted"}))
}

// TestNumberTypes: objects built by json.Unmarshal into a map carry float64
// numbers, objects from the API machinery int64; both read the same.
func TestNumberTypes(t *testing.T) {
	for _, tc := range []struct {
		name string
		num  func(int) any
	}{
		{"int64", func(i int) any { return int64(i) }},
		{"float64", func(i int) any { return float64(i) }},
		{"int", func(i int) any { return i }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			obj := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "apps/v1", "kind": "Deployment",
				"metadata": map[string]any{"name": "web", "generation": tc.num(2)},
				"spec":     map[string]any{"replicas": tc.num(2)},
				"status": map[string]any{
					"observedGeneration": tc.num(2), "replicas": tc.num(2),
					"updatedReplicas": tc.num(2), "availableReplicas": tc.num(2),
				},
			}}
			g.Expect(Evaluate(obj).Status).To(Equal(Healthy))
		})
	}
}

func TestMistypedFieldsDoNotPanic(t *testing.T) {
	g := NewWithT(t)
	for kind, apiVersion := range map[string]string{
		"Deployment": "apps/v1", "StatefulSet": "apps/v1", "DaemonSet": "apps/v1", "ReplicaSet": "apps/v1",
		"Pod": "v1", "Job": "batch/v1", "PersistentVolumeClaim": "v1", "Service": "v1",
		"Ingress": "networking.k8s.io/v1", "HorizontalPodAutoscaler": "autoscaling/v2",
		"APIService": "apiregistration.k8s.io/v1", "CustomResourceDefinition": "apiextensions.k8s.io/v1",
		"Namespace": "v1", "Widget": "example.com/v1",
	} {
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": apiVersion, "kind": kind,
			"metadata": map[string]any{"name": "x", "generation": "two"},
			"spec":     "not a map",
			"status": map[string]any{
				"conditions":        []any{"not a map", map[string]any{"type": 5}},
				"containerStatuses": []any{7},
				"loadBalancer":      map[string]any{"ingress": []any{"x"}},
				"replicas":          1.5,
			},
		}}
		r := Evaluate(obj)
		g.Expect(rank).To(HaveKey(r.Status), "%s: %v", kind, r)
	}
}

func TestWorse(t *testing.T) {
	order := []Status{Healthy, Suspended, Progressing, Missing, Degraded, Unknown}
	for i, a := range order {
		for j, b := range order {
			t.Run(string(a)+"-"+string(b), func(t *testing.T) {
				NewWithT(t).Expect(Worse(a, b)).To(Equal(i > j))
			})
		}
	}
	t.Run("unrecognized ranks as Unknown", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(Worse("Bogus", Degraded)).To(BeTrue())
		g.Expect(Worse("Bogus", Unknown)).To(BeFalse())
		g.Expect(Worse(Unknown, "Bogus")).To(BeFalse())
	})
}

func TestResultString(t *testing.T) {
	g := NewWithT(t)
	g.Expect(Result{Status: Healthy}.String()).To(Equal("Healthy"))
	g.Expect(Result{Status: Degraded, Message: "boom"}.String()).To(Equal("Degraded: boom"))
}
