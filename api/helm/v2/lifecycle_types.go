package v2

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The release lifecycle: what sync-controller does when an install or an
// upgrade fails (a sync that fails, the wait for health included), with
// Flux's field names and meanings. docs/design/helm.md, "Failures,
// retries and remediation", has the model.

// RemediatedCondition (owned by sync-controller) says that the failure of
// the newest install or upgrade was remediated: rolled back or
// uninstalled. It stays until the next install or upgrade succeeds.
const RemediatedCondition = "Remediated"

// Reasons of the Remediated condition, and of Ready while it explains it.
const (
	// RollbackSucceededReason: the last deployed release was applied again.
	RollbackSucceededReason = "RollbackSucceeded"
	// RollbackFailedReason: applying the last deployed release again failed.
	RollbackFailedReason = "RollbackFailed"
	// UninstallSucceededReason: the release's objects were deleted.
	UninstallSucceededReason = "UninstallSucceeded"
	// UninstallFailedReason: deleting the release's objects failed.
	UninstallFailedReason = "UninstallFailed"
)

// Strategies of install.strategy.name and upgrade.strategy.name.
const (
	// RemediateOnFailure: a failure is remediated as remediation says,
	// between retries and, when remediateLastFailure, after the last.
	RemediateOnFailure = "RemediateOnFailure"
	// RetryOnFailure: a failure is retried every retryInterval, never
	// remediated.
	RetryOnFailure = "RetryOnFailure"
)

// Remediation strategies of upgrade.remediation.strategy.
const (
	RollbackRemediation  = "rollback"
	UninstallRemediation = "uninstall"
)

// Release actions of status.lastAttemptedReleaseAction.
const (
	ReleaseActionInstall = "install"
	ReleaseActionUpgrade = "upgrade"
)

// ReleaseStatusUninstalled is the status of the history entries an
// uninstall with keepHistory kept, as Helm marks them.
const ReleaseStatusUninstalled = "uninstalled"

// defaultRetryInterval is Flux's default retryInterval.
const defaultRetryInterval = 5 * time.Minute

// Strategy is install.strategy or upgrade.strategy.
// +kubebuilder:validation:XValidation:rule="!has(self.retryInterval) || self.name == 'RetryOnFailure'",message="retryInterval can only be set with RetryOnFailure"
type Strategy struct {
	// Name is RemediateOnFailure or RetryOnFailure.
	// +required
	// +kubebuilder:validation:Enum=RemediateOnFailure;RetryOnFailure
	Name string `json:"name"`

	// RetryInterval is the wait between two tries of a failed release
	// under RetryOnFailure; defaults to 5m.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	RetryInterval *metav1.Duration `json:"retryInterval,omitempty"`
}

// InstallRemediation says what happens when an install fails.
type InstallRemediation struct {
	// Retries is how many times a failed install is tried again, with an
	// uninstall before each; negative is without end. Defaults to 0.
	// +optional
	Retries int `json:"retries,omitempty"`

	// IgnoreTestFailures keeps a failed chart test from failing the
	// install (and so from remediation).
	// +optional
	IgnoreTestFailures *bool `json:"ignoreTestFailures,omitempty"`

	// RemediateLastFailure uninstalls after the last failure too, when no
	// retry is left. Defaults to false.
	// +optional
	RemediateLastFailure *bool `json:"remediateLastFailure,omitempty"`
}

// UpgradeRemediation says what happens when an upgrade fails.
type UpgradeRemediation struct {
	// Retries is how many times a failed upgrade is tried again, with a
	// remediation (strategy) before each; negative is without end.
	// Defaults to 0.
	// +optional
	Retries int `json:"retries,omitempty"`

	// IgnoreTestFailures keeps a failed chart test from failing the
	// upgrade (and so from remediation).
	// +optional
	IgnoreTestFailures *bool `json:"ignoreTestFailures,omitempty"`

	// RemediateLastFailure remediates the last failure too, when no retry
	// is left. Defaults to true when retries is above 0, else false.
	// +optional
	RemediateLastFailure *bool `json:"remediateLastFailure,omitempty"`

	// Strategy is rollback (apply the last deployed release again) or
	// uninstall (delete the release's objects; the next try installs).
	// Defaults to rollback.
	// +optional
	// +kubebuilder:validation:Enum=rollback;uninstall
	Strategy string `json:"strategy,omitempty"`
}

// Rollback holds the settings of a rollback (upgrade.remediation.strategy:
// rollback): a sync of the last deployed release's render.
type Rollback struct {
	// Timeout bounds the rollback's hooks and wait for health; defaults to
	// spec.timeout.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// DisableWait does not wait for the rolled-back objects to be healthy:
	// the rollback succeeds once they are applied.
	// +optional
	DisableWait bool `json:"disableWait,omitempty"`

	// DisableHooks runs none of the chart's pre-rollback and post-rollback
	// hooks.
	// +optional
	DisableHooks bool `json:"disableHooks,omitempty"`

	// Force replaces (deletes and creates again) an object whose change
	// the API server refuses as immutable, as plumb.dev/force does.
	// +optional
	Force bool `json:"force,omitempty"`
}

// Uninstall holds the settings of an uninstall: the remediation of a
// failed install, upgrade.remediation.strategy: uninstall, and the
// deletion of the HelmRelease.
type Uninstall struct {
	// Timeout bounds the wait for the deleted objects to be gone; defaults
	// to spec.timeout.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// DisableHooks runs none of the chart's pre-delete and post-delete
	// hooks.
	// +optional
	DisableHooks bool `json:"disableHooks,omitempty"`

	// KeepHistory keeps status.history after an uninstall remediation,
	// its entries marked uninstalled; without it the history is emptied,
	// as Helm deletes its release records.
	// +optional
	KeepHistory bool `json:"keepHistory,omitempty"`

	// DisableWait does not wait for the deleted objects to be gone.
	// +optional
	DisableWait bool `json:"disableWait,omitempty"`

	// DeletionPropagation is how the objects' dependents are deleted:
	// background (the default), foreground or orphan.
	// +optional
	// +kubebuilder:validation:Enum=background;foreground;orphan
	DeletionPropagation string `json:"deletionPropagation,omitempty"`
}

// GetInstallStrategy returns install.strategy.name, RemediateOnFailure
// when unset.
func (in *HelmRelease) GetInstallStrategy() string {
	if in.Spec.Install != nil && in.Spec.Install.Strategy != nil {
		return in.Spec.Install.Strategy.Name
	}
	return RemediateOnFailure
}

// GetUpgradeStrategy returns upgrade.strategy.name, RemediateOnFailure
// when unset.
func (in *HelmRelease) GetUpgradeStrategy() string {
	if in.Spec.Upgrade != nil && in.Spec.Upgrade.Strategy != nil {
		return in.Spec.Upgrade.Strategy.Name
	}
	return RemediateOnFailure
}

// GetRetryInterval returns retryInterval, 5m when unset.
func (in *Strategy) GetRetryInterval() time.Duration {
	if in == nil || in.RetryInterval == nil {
		return defaultRetryInterval
	}
	return in.RetryInterval.Duration
}

// RemediationOf is what the remediation settings of one action say.
type RemediationOf struct {
	// Retries is how many tries after the first are allowed; negative is
	// without end.
	Retries int
	// RemediateLastFailure remediates when no retry is left.
	RemediateLastFailure bool
	// Strategy is rollback or uninstall (always uninstall for an install).
	// (ignoreTestFailures is read by HelmRelease.IgnoresTestFailures.)
	Strategy string
}

// Exhausted says whether failures leave no retry.
func (r RemediationOf) Exhausted(failures int64) bool {
	return r.Retries >= 0 && failures > int64(r.Retries)
}

// GetInstallRemediation returns install.remediation with Flux's defaults:
// no retry, no remediation of the last failure, uninstall.
func (in *HelmRelease) GetInstallRemediation() RemediationOf {
	out := RemediationOf{Strategy: UninstallRemediation}
	if in.Spec.Install == nil || in.Spec.Install.Remediation == nil {
		return out
	}
	r := in.Spec.Install.Remediation
	out.Retries = r.Retries
	out.RemediateLastFailure = r.RemediateLastFailure != nil && *r.RemediateLastFailure
	return out
}

// GetUpgradeRemediation returns upgrade.remediation with Flux's defaults:
// no retry, rollback, remediateLastFailure when retries > 0.
func (in *HelmRelease) GetUpgradeRemediation() RemediationOf {
	out := RemediationOf{Strategy: RollbackRemediation}
	if in.Spec.Upgrade == nil || in.Spec.Upgrade.Remediation == nil {
		return out
	}
	r := in.Spec.Upgrade.Remediation
	out.Retries = r.Retries
	out.RemediateLastFailure = r.Retries > 0
	if r.RemediateLastFailure != nil {
		out.RemediateLastFailure = *r.RemediateLastFailure
	}
	if r.Strategy != "" {
		out.Strategy = r.Strategy
	}
	return out
}
