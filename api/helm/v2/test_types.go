package v2

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestSuccessCondition (owned by sync-controller) says whether the chart's
// tests passed against the newest release (spec.test).
const TestSuccessCondition = "TestSuccess"

// Reasons of the TestSuccess condition and of the test events, Flux's.
const (
	// TestSucceededReason: every selected test hook succeeded (or the
	// chart has none).
	TestSucceededReason = "TestSucceeded"
	// TestFailedReason: a test hook failed or did not finish within
	// test.timeout; the tests after it did not run.
	TestFailedReason = "TestFailed"
)

// Phases of a test hook in status.history[].testHooks, Helm's.
const (
	TestHookPhaseRunning   = "Running"
	TestHookPhaseSucceeded = "Succeeded"
	TestHookPhaseFailed    = "Failed"
)

// Test says whether and which of the chart's tests run after a release.
type Test struct {
	// Enable runs the chart's test hooks after every successful install
	// or upgrade, in Helm's order (weight, then name), one at a time.
	// +optional
	Enable bool `json:"enable,omitempty"`

	// Timeout bounds each test hook's run; defaults to spec.timeout.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// IgnoreFailures keeps a failed test from failing the release: it is
	// still recorded (TestSuccess=False, the hook's phase in the history,
	// an event), but the HelmRelease stays Ready.
	// +optional
	IgnoreFailures bool `json:"ignoreFailures,omitempty"`

	// Filters include or exclude tests by their hook's name, as `helm test
	// --filter`: when any entry includes, only those run; an excluded one
	// never does.
	// +optional
	// +kubebuilder:validation:MaxItems=100
	Filters *[]Filter `json:"filters,omitempty"`
}

// Filter includes or excludes one test.
type Filter struct {
	// Name is the test hook's metadata.name.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// Exclude leaves the test out instead of selecting it.
	// +optional
	Exclude bool `json:"exclude,omitempty"`
}

// TestHookStatus is one test hook's run against a release.
type TestHookStatus struct {
	// LastStarted is when the hook was created.
	// +optional
	LastStarted *metav1.Time `json:"lastStarted,omitempty"`
	// LastCompleted is when it succeeded or failed.
	// +optional
	LastCompleted *metav1.Time `json:"lastCompleted,omitempty"`
	// Phase is Running, Succeeded or Failed; empty for a selected test
	// that did not run because one before it failed.
	// +optional
	Phase string `json:"phase,omitempty"`
}

// TestsEnabled reports whether spec.test.enable is set.
func (in *HelmRelease) TestsEnabled() bool {
	return in.Spec.Test != nil && in.Spec.Test.Enable
}

// GetTestTimeout returns test.timeout, else spec.timeout.
func (in *HelmRelease) GetTestTimeout() time.Duration {
	if in.Spec.Test != nil && in.Spec.Test.Timeout != nil {
		return in.Spec.Test.Timeout.Duration
	}
	return in.GetTimeout().Duration
}

// GetTestFilters returns test.filters, nil when unset.
func (in *HelmRelease) GetTestFilters() []Filter {
	if in.Spec.Test == nil || in.Spec.Test.Filters == nil {
		return nil
	}
	return *in.Spec.Test.Filters
}

// IgnoresTestFailures reports whether a failed test leaves the release
// counting as successful. The remediation of the newest attempt's action
// (status.lastAttemptedReleaseAction: install.remediation or
// upgrade.remediation) decides with its ignoreTestFailures when it sets
// one; else test.ignoreFailures does, as in Flux. The one rule that
// sync-controller's chart tests and FailedByTests read.
func (in *HelmRelease) IgnoresTestFailures() bool {
	var set *bool
	switch in.Status.LastAttemptedReleaseAction {
	case ReleaseActionInstall:
		if in.Spec.Install != nil && in.Spec.Install.Remediation != nil {
			set = in.Spec.Install.Remediation.IgnoreTestFailures
		}
	case ReleaseActionUpgrade:
		if in.Spec.Upgrade != nil && in.Spec.Upgrade.Remediation != nil {
			set = in.Spec.Upgrade.Remediation.IgnoreTestFailures
		}
	}
	if set != nil {
		return *set
	}
	return in.Spec.Test != nil && in.Spec.Test.IgnoreFailures
}

// TestSelected reports whether the test hook of this name runs under the
// filters, as `helm test --filter` selects: an excluded name never, and
// when any filter includes, only the names included.
func TestSelected(name string, filters []Filter) bool {
	including, included := false, false
	for _, f := range filters {
		switch {
		case f.Exclude && f.Name == name:
			return false
		case !f.Exclude:
			including = true
			included = included || f.Name == name
		}
	}
	return !including || included
}

// HasBeenTested reports whether the chart's tests ran to their end
// against this release, as Flux reads it: testHooks is set and empty (no
// test selected), or a hook failed, or every hook succeeded. A hook still
// Running (the controller stopped during the tests) is no result: the
// tests run again.
func (in *Snapshot) HasBeenTested() bool {
	if in == nil || in.TestHooks == nil {
		return false
	}
	if in.TestsFailed() {
		return true
	}
	for _, h := range *in.TestHooks {
		if h == nil || h.Phase != TestHookPhaseSucceeded {
			return false
		}
	}
	return true
}

// TestsFailed reports whether a test hook of this release failed.
func (in *Snapshot) TestsFailed() bool {
	if in == nil || in.TestHooks == nil {
		return false
	}
	for _, h := range *in.TestHooks {
		if h != nil && h.Phase == TestHookPhaseFailed {
			return true
		}
	}
	return false
}

// FailedByTests reports whether the newest release counts as failed
// because its tests failed: they ran, one failed, and failures are not
// ignored (IgnoresTestFailures). sync-controller sets Ready=False
// (TestFailed) while it holds; remediation is to act on it.
func (in *HelmRelease) FailedByTests() bool {
	if len(in.Status.History) == 0 || in.IgnoresTestFailures() {
		return false
	}
	return in.Status.History[0].TestsFailed()
}
