package v2

import "testing"

func TestTestSelectedAsHelmTestFilters(t *testing.T) {
	for _, tc := range []struct {
		name    string
		filters []Filter
		want    bool
	}{
		{"a", nil, true},
		{"a", []Filter{{Name: "a", Exclude: true}}, false},
		{"b", []Filter{{Name: "a", Exclude: true}}, true},
		{"a", []Filter{{Name: "a"}}, true},
		{"b", []Filter{{Name: "a"}}, false},
		{"a", []Filter{{Name: "a"}, {Name: "a", Exclude: true}}, false},
	} {
		if got := TestSelected(tc.name, tc.filters); got != tc.want {
			t.Errorf("TestSelected(%q, %v) = %v, want %v", tc.name, tc.filters, got, tc.want)
		}
	}
}

func TestHasBeenTestedAndFailedByTests(t *testing.T) {
	hooks := func(phases ...string) *map[string]*TestHookStatus {
		m := map[string]*TestHookStatus{}
		for i, p := range phases {
			m[string(rune('a'+i))] = &TestHookStatus{Phase: p}
		}
		return &m
	}
	for _, tc := range []struct {
		what           string
		hooks          *map[string]*TestHookStatus
		ignore         bool
		tested, failed bool
	}{
		{"not run", nil, false, false, false},
		{"no test selected", hooks(), false, true, false},
		{"all succeeded", hooks(TestHookPhaseSucceeded, TestHookPhaseSucceeded), false, true, false},
		{"still running: run again", hooks(TestHookPhaseSucceeded, TestHookPhaseRunning), false, false, false},
		{"one failed, the next not run", hooks(TestHookPhaseFailed, ""), false, true, true},
		{"failed but ignored", hooks(TestHookPhaseFailed), true, true, false},
	} {
		hr := &HelmRelease{Status: HelmReleaseStatus{History: []Snapshot{{TestHooks: tc.hooks}}}}
		hr.Spec.Test = &Test{Enable: true, IgnoreFailures: tc.ignore}
		if got := hr.Status.History[0].HasBeenTested(); got != tc.tested {
			t.Errorf("%s: HasBeenTested = %v, want %v", tc.what, got, tc.tested)
		}
		if got := hr.FailedByTests(); got != tc.failed {
			t.Errorf("%s: FailedByTests = %v, want %v", tc.what, got, tc.failed)
		}
	}
}
