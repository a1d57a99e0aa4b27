package v2

import (
	"fmt"
	"testing"
)

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

// TestTheActionsRemediationDecidesWhetherTestFailuresAreIgnored: every
// combination of the newest attempt's action, that action's
// remediation.ignoreTestFailures (unset, false, true), the other action's
// (which never counts) and test.ignoreFailures, read by the one rule
// (IgnoresTestFailures) through FailedByTests.
func TestTheActionsRemediationDecidesWhetherTestFailuresAreIgnored(t *testing.T) {
	failed := map[string]*TestHookStatus{"t": {Phase: TestHookPhaseFailed}}
	for _, action := range []string{ReleaseActionInstall, ReleaseActionUpgrade} {
		for _, own := range []*bool{nil, boolPtr(false), boolPtr(true)} {
			for _, other := range []*bool{nil, boolPtr(false), boolPtr(true)} {
				for _, testIgnores := range []bool{false, true} {
					hr := &HelmRelease{Spec: HelmReleaseSpec{
						Test:    &Test{Enable: true, IgnoreFailures: testIgnores},
						Install: &Install{Remediation: &InstallRemediation{}},
						Upgrade: &Upgrade{Remediation: &UpgradeRemediation{}},
					}}
					hr.Status.LastAttemptedReleaseAction = action
					hr.Status.History = []Snapshot{{TestHooks: &failed}}
					if action == ReleaseActionInstall {
						hr.Spec.Install.Remediation.IgnoreTestFailures = own
						hr.Spec.Upgrade.Remediation.IgnoreTestFailures = other
					} else {
						hr.Spec.Upgrade.Remediation.IgnoreTestFailures = own
						hr.Spec.Install.Remediation.IgnoreTestFailures = other
					}
					want := testIgnores
					if own != nil {
						want = *own
					}
					what := fmt.Sprintf("%s, own %v, other %v, test.ignoreFailures %v", action, str(own), str(other), testIgnores)
					if got := hr.IgnoresTestFailures(); got != want {
						t.Errorf("%s: IgnoresTestFailures = %v, want %v", what, got, want)
					}
					if got := hr.FailedByTests(); got != !want {
						t.Errorf("%s: FailedByTests = %v, want %v", what, got, !want)
					}
				}
			}
		}
	}
	// No attempt yet (a release whose status lost it): test.ignoreFailures.
	hr := &HelmRelease{Spec: HelmReleaseSpec{Test: &Test{IgnoreFailures: true},
		Install: &Install{Remediation: &InstallRemediation{IgnoreTestFailures: boolPtr(false)}}}}
	if !hr.IgnoresTestFailures() {
		t.Error("without an attempted action, test.ignoreFailures decides")
	}
}

func str(b *bool) string {
	if b == nil {
		return "unset"
	}
	return fmt.Sprint(*b)
}
