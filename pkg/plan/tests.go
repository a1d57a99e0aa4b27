package plan

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/argocd"
)

// Test is the phase of a Helm chart's tests: never part of a sync plan,
// run by sync-controller after a release when the HelmRelease asks
// (ChartTests).
const Test PhaseName = "Test"

// helmTestEvents are the helm.sh/hook values Helm runs on `helm test`;
// test-success is Helm 2's name.
var helmTestEvents = []string{"test", "test-success"}

// TestHook is one of a chart's tests: the object to create and its weight.
type TestHook struct {
	Object
	Weight int
}

// ChartTests returns the chart's test hooks among objs — objects whose
// helm.sh/hook lists test (and which plumb.dev/hook or Argo CD's hook
// annotation does not move elsewhere) — for which selected returns true
// (nil selects all), in the order Helm runs them: by helm.sh/hook-weight,
// then by name. Their delete policies are read as for any Helm hook; a
// generateName gets a name from syncID as in Build. Errors are all
// reported together.
func ChartTests(objs []*unstructured.Unstructured, syncID string, selected func(name string) bool) ([]TestHook, error) {
	var out []TestHook
	var errs []error
	for i, src := range objs {
		if src == nil || !isHelmTest(src.GetAnnotations()) {
			continue
		}
		name := src.GetName()
		if name == "" && src.GetGenerateName() == "" {
			errs = append(errs, fmt.Errorf("%s: a test hook needs metadata.name or metadata.generateName", nameForError(i, src)))
			continue
		}
		if name == "" && syncID == "" {
			errs = append(errs, fmt.Errorf("%s: naming a generateName test hook needs a sync id", nameForError(i, src)))
			continue
		}
		if selected != nil && !selected(name) {
			continue
		}
		policies, err := deletePolicies(src.GetAnnotations(), false)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", nameForError(i, src), err))
			continue
		}
		obj := src.DeepCopy()
		h := &Hook{Phases: []PhaseName{Test}, DeletePolicies: policies}
		if name == "" {
			h.GenerateName = obj.GetGenerateName()
			obj.SetName(hookName(syncID, Test, obj, i))
			obj.SetGenerateName("")
		}
		// Helm reads a weight that is no integer as 0.
		weight, _ := strconv.ParseInt(strings.TrimSpace(src.GetAnnotations()[helmv2.HookWeightAnnotation]), 10, 32)
		out = append(out, TestHook{Object: Object{Unstructured: obj, Phase: Test, Hook: h}, Weight: int(weight)})
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	slices.SortStableFunc(out, func(a, b TestHook) int {
		if a.Weight != b.Weight {
			return a.Weight - b.Weight
		}
		return strings.Compare(a.GetName(), b.GetName())
	})
	return out, nil
}

// isHelmTest reports whether helm.sh/hook makes the object a test, and no
// annotation that wins over Helm's gives it a phase of a sync.
func isHelmTest(ann map[string]string) bool {
	if _, plumbHook := ann[kustomizev1.HookAnnotation]; plumbHook {
		return false
	}
	if types, ok := argocd.Hook(ann); ok && len(types) > 0 {
		return false
	}
	for _, f := range argocd.Items(ann[helmv2.HookAnnotation]) {
		if slices.Contains(helmTestEvents, strings.ToLower(f)) {
			return true
		}
	}
	return false
}
