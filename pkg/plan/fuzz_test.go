package plan

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	kustomizev1 "plumb.dev/api/kustomize/v1"
)

// FuzzAnnotations: the wave, hook and delete-policy annotations come from
// Git. Build never panics on them, accepts a wave exactly when it is an
// int32 after trimming spaces, and plans an accepted hook once per phase.
func FuzzAnnotations(f *testing.F) {
	for _, s := range [][3]string{
		{"0", "", ""}, {"-3", "PreSync", "HookSucceeded"}, {" 7 ", "PreSync,PostSync", "HookFailed, BeforeHookCreation"},
		{"x", "Sync", ""}, {"", ",", ","}, {"2147483648", "SyncFail,SyncFail", "HookSucceeded,HookSucceeded"}, {"+1", "presync", "Never"},
	} {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, wave, hook, policy string) {
		ann := map[string]any{kustomizev1.SyncWaveAnnotation: wave}
		if hook != "" {
			ann[kustomizev1.HookAnnotation] = hook
			ann[kustomizev1.HookDeletePolicyAnnotation] = policy
		}
		o := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "batch/v1", "kind": "Job",
			"metadata": map[string]any{"generateName": "j-", "name": "", "namespace": "ns", "annotations": ann},
		}}
		if hook == "" {
			o.SetName("j")
		}
		p, err := Build([]*unstructured.Unstructured{o}, Options{SyncID: "fuzz"})
		_, waveErr := strconv.ParseInt(strings.TrimSpace(wave), 10, 32)
		if waveErr != nil {
			if err == nil {
				t.Fatalf("wave %q accepted", wave)
			}
			return
		}
		if err != nil {
			if hook == "" {
				t.Fatalf("valid wave %q refused: %v", wave, err)
			}
			return
		}
		if hook == "" {
			if len(p.Inventory) != 1 {
				t.Fatalf("inventory %v", p.Inventory)
			}
			return
		}
		h, _ := parseHook(map[string]string{kustomizev1.HookAnnotation: hook, kustomizev1.HookDeletePolicyAnnotation: policy}, helmUpgrade)
		syncPhases := slices.DeleteFunc(slices.Clone(h.Phases), deleting)
		if got := len(p.Hooks()); got != len(syncPhases) || len(p.Inventory) != 0 {
			t.Fatalf("hook %q: %d tasks for phases %v, inventory %d", hook, got, h.Phases, len(p.Inventory))
		}
	})
}
