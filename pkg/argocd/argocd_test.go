package argocd_test

import (
	"testing"

	. "github.com/onsi/gomega"

	"plumb.dev/pkg/argocd"
)

func TestSyncOptionsAreExactItemsOfACommaList(t *testing.T) {
	g := NewWithT(t)
	ann := map[string]string{argocd.SyncOptionsAnnotation: " Prune=false ,Replace=true,,Force=True"}
	g.Expect(argocd.HasSyncOption(ann, argocd.PruneDisabled)).To(BeTrue())
	g.Expect(argocd.HasSyncOption(ann, argocd.Replace)).To(BeTrue())
	// Argo CD compares items exactly: Force=True is not Force=true.
	g.Expect(argocd.HasSyncOption(ann, argocd.Force)).To(BeFalse())
	g.Expect(argocd.HasSyncOption(nil, argocd.PruneDisabled)).To(BeFalse())
	g.Expect(argocd.IgnoresExtraneous(map[string]string{argocd.CompareOptionsAnnotation: "IgnoreExtraneous"})).To(BeTrue())
	g.Expect(argocd.IgnoresExtraneous(map[string]string{argocd.CompareOptionsAnnotation: "ServerSideDiff=true"})).To(BeFalse())
}

func TestHookAndWave(t *testing.T) {
	g := NewWithT(t)
	types, ok := argocd.Hook(map[string]string{argocd.HookAnnotation: "PreSync, bogus,PreSync,PostDelete"})
	g.Expect(ok).To(BeTrue())
	g.Expect(types).To(Equal([]string{"PreSync", "PostDelete"}))
	types, ok = argocd.Hook(map[string]string{argocd.HookAnnotation: ""})
	g.Expect(ok).To(BeTrue(), "set but empty is still a hook")
	g.Expect(types).To(BeEmpty())
	_, ok = argocd.Hook(nil)
	g.Expect(ok).To(BeFalse())
	g.Expect(argocd.HookDeletePolicies(map[string]string{argocd.HookDeletePolicyAnnotation: "HookFailed,hooksucceeded,BeforeHookCreation"})).
		To(Equal([]string{"HookFailed", "BeforeHookCreation"}))

	for v, want := range map[string]int{"3": 3, "-2": -2, "+4": 4} {
		n, ok := argocd.Wave(map[string]string{argocd.SyncWaveAnnotation: v})
		g.Expect(ok).To(BeTrue(), v)
		g.Expect(n).To(Equal(want), v)
	}
	for _, v := range []string{" 1", "1.5", "x", "", "99999999999"} {
		_, ok := argocd.Wave(map[string]string{argocd.SyncWaveAnnotation: v})
		g.Expect(ok).To(BeFalse(), v)
	}
}

func TestConflicts(t *testing.T) {
	g := NewWithT(t)
	for _, tc := range []struct {
		name string
		ann  map[string]string
		want []string
	}{
		{"agreeing pairs", map[string]string{
			"plumb.dev/hook": "PostSync,PreSync", argocd.HookAnnotation: "PreSync,PostSync",
			"plumb.dev/sync-wave": " 2", argocd.SyncWaveAnnotation: "2",
			"plumb.dev/prune": "disabled", "plumb.dev/force": "enabled",
			argocd.SyncOptionsAnnotation: "Prune=false,Force=true",
		}, nil},
		{"only one side", map[string]string{
			argocd.HookAnnotation: "PreSync", "plumb.dev/sync-wave": "4", argocd.SyncOptionsAnnotation: "Prune=false",
		}, nil},
		{"hooks", map[string]string{"plumb.dev/hook": "PreSync", argocd.HookAnnotation: "PostSync"},
			[]string{`plumb.dev/hook: "PreSync" is followed, not argocd.argoproj.io/hook: "PostSync"`}},
		{"delete policies", map[string]string{"plumb.dev/hook-delete-policy": "HookSucceeded", argocd.HookDeletePolicyAnnotation: "HookFailed"},
			[]string{`plumb.dev/hook-delete-policy: "HookSucceeded" is followed, not argocd.argoproj.io/hook-delete-policy: "HookFailed"`}},
		{"waves", map[string]string{"plumb.dev/sync-wave": "1", argocd.SyncWaveAnnotation: "x"},
			[]string{`plumb.dev/sync-wave: "1" is followed, not argocd.argoproj.io/sync-wave: "x"`}},
		{"prune and force", map[string]string{
			"plumb.dev/prune": "enabled", "plumb.dev/force": "enabled", argocd.SyncOptionsAnnotation: "Prune=false,Force=false",
		}, []string{
			`plumb.dev/prune: "enabled" is followed, not argocd.argoproj.io/sync-options: Prune=false`,
			`plumb.dev/force: "enabled" is followed, not argocd.argoproj.io/sync-options: Force=false`,
		}},
	} {
		var got []string
		for _, c := range argocd.Conflicts(tc.ann) {
			got = append(got, c.String())
		}
		g.Expect(got).To(Equal(tc.want), tc.name)
	}
}
