package v2

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ActionSwitches are the switches of Flux's install and upgrade that mean
// the same on both, each read by sync-controller or render-controller
// (docs/design/helm.md, "Install and upgrade switches").
type ActionSwitches struct {
	// Timeout bounds this action's sync: its hooks and the wait for
	// health; defaults to spec.timeout.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// DisableHooks runs none of the chart's hooks: the sync applies its
	// objects only, as Helm's --no-hooks. Chart tests (spec.test) still
	// run, as after `helm upgrade --no-hooks` a `helm test` does.
	// +optional
	DisableHooks bool `json:"disableHooks,omitempty"`

	// DisableWait makes the release Ready once its objects are applied,
	// without waiting for them to be healthy, between waves or at the
	// end; hooks are still waited on, since they must complete.
	// +optional
	DisableWait bool `json:"disableWait,omitempty"`

	// DisableWaitForJobs waits for every object but Jobs, which count as
	// applied once created (hooks that are Jobs are still waited on).
	// +optional
	DisableWaitForJobs bool `json:"disableWaitForJobs,omitempty"`

	// DisableSchemaValidation renders without checking the values against
	// the chart's values.schema.json files.
	// +optional
	DisableSchemaValidation bool `json:"disableSchemaValidation,omitempty"`

	// DisableTakeOwnership refuses to take over an object that exists and
	// is not this release's (Helm without --take-ownership): the sync
	// fails naming it, and nothing of its wave is applied.
	// +optional
	DisableTakeOwnership bool `json:"disableTakeOwnership,omitempty"`
}

// GetActionSwitches returns the switches of the action a sync makes:
// install's while installing, upgrade's after; zero when unset.
func (in *HelmRelease) GetActionSwitches(installing bool) ActionSwitches {
	switch {
	case installing && in.Spec.Install != nil:
		return in.Spec.Install.ActionSwitches
	case !installing && in.Spec.Upgrade != nil:
		return in.Spec.Upgrade.ActionSwitches
	}
	return ActionSwitches{}
}

// GetActionTimeout returns the timeout of the action a sync makes: its
// own, else spec.timeout.
func (in *HelmRelease) GetActionTimeout(installing bool) time.Duration {
	if t := in.GetActionSwitches(installing).Timeout; t != nil {
		return t.Duration
	}
	return in.GetTimeout().Duration
}
