package cmd

import (
	"fmt"

	apimeta "k8s.io/apimachinery/pkg/api/meta"

	helmv2 "plumb.dev/api/helm/v2"
)

// describeAttempts prints, for `plumb get helmrelease NAME`, the newest
// install or upgrade attempt and what became of it: the action and how
// long its sync took, the failure counters, what the spec does on a
// failure of the next action, and the remediation made (the Remediated
// condition). Each attempt's release, and why it failed, is in the
// history's DESCRIPTION column.
func describeAttempts(hr *helmv2.HelmRelease, field func(name, value string)) {
	st := &hr.Status
	attempt := "-"
	if st.LastAttemptedReleaseAction != "" {
		attempt = st.LastAttemptedReleaseAction + " of " + dash(st.LastAttemptedRevision)
		if d := st.LastAttemptedReleaseActionDuration; d != nil {
			attempt += ", took " + d.Duration.String()
		}
		if c := apimeta.FindStatusCondition(hr.Status.Conditions, helmv2.ReleasedCondition); c != nil {
			attempt += ", " + c.Reason
		}
	}
	field("Last attempt", attempt)
	field("Failures", fmt.Sprintf("%d (install %d, upgrade %d)", st.Failures, st.InstallFailures, st.UpgradeFailures))
	field("On failure", onFailure(hr))
	remediation := "-"
	if c := apimeta.FindStatusCondition(hr.Status.Conditions, helmv2.RemediatedCondition); c != nil {
		remediation = c.Reason + ": " + oneLine(c.Message)
	}
	field("Remediation", remediation)
}

// onFailure words what a failure of the next action (the install until a
// release is deployed, an upgrade after) leads to, as the spec says.
func onFailure(hr *helmv2.HelmRelease) string {
	action, strategy, rem := "upgrade", hr.GetUpgradeStrategy(), hr.GetUpgradeRemediation()
	var retryInterval string
	if hr.Spec.Upgrade != nil {
		retryInterval = hr.Spec.Upgrade.Strategy.GetRetryInterval().String()
	}
	if !deployed(hr) {
		action, strategy, rem = "install", hr.GetInstallStrategy(), hr.GetInstallRemediation()
		retryInterval = ""
		if hr.Spec.Install != nil {
			retryInterval = hr.Spec.Install.Strategy.GetRetryInterval().String()
		}
	}
	if retryInterval == "" {
		retryInterval = (*helmv2.Strategy)(nil).GetRetryInterval().String()
	}
	if strategy == helmv2.RetryOnFailure {
		return fmt.Sprintf("%s: %s, every %s, never remediated", action, strategy, retryInterval)
	}
	retries := fmt.Sprint(rem.Retries)
	if rem.Retries < 0 {
		retries = "without end"
	}
	last := "left as it is"
	if rem.RemediateLastFailure {
		last = "remediated"
	}
	return fmt.Sprintf("%s: %s, retries %s, remediation %s, last failure %s", action, strategy, retries, rem.Strategy, last)
}

// deployed says whether a release of the history is deployed (or was,
// superseded since): the next action is an upgrade.
func deployed(hr *helmv2.HelmRelease) bool {
	for _, s := range hr.Status.History {
		if s.Status == helmv2.ReleaseStatusDeployed || s.Status == helmv2.ReleaseStatusSuperseded {
			return true
		}
	}
	return false
}
