package v2

import "testing"

func boolPtr(b bool) *bool { return &b }

// TestRemediationDefaults: Flux's defaults — no retry; an install's last
// failure not remediated; an upgrade's remediated when retries > 0;
// rollback; a negative retries never exhausted.
func TestRemediationDefaults(t *testing.T) {
	hr := &HelmRelease{}
	if r := hr.GetInstallRemediation(); r.Retries != 0 || r.RemediateLastFailure || r.Strategy != UninstallRemediation || !r.Exhausted(1) || r.Exhausted(0) {
		t.Errorf("install defaults: %+v", r)
	}
	if r := hr.GetUpgradeRemediation(); r.RemediateLastFailure || r.Strategy != RollbackRemediation {
		t.Errorf("upgrade defaults: %+v", r)
	}
	hr.Spec.Upgrade = &Upgrade{Remediation: &UpgradeRemediation{Retries: 2}}
	if r := hr.GetUpgradeRemediation(); !r.RemediateLastFailure || r.Exhausted(2) || !r.Exhausted(3) {
		t.Errorf("upgrade with retries: %+v", r)
	}
	hr.Spec.Upgrade.Remediation = &UpgradeRemediation{Retries: -1, RemediateLastFailure: boolPtr(false), Strategy: UninstallRemediation}
	if r := hr.GetUpgradeRemediation(); r.RemediateLastFailure || r.Exhausted(1000) || r.Strategy != UninstallRemediation {
		t.Errorf("upgrade without end: %+v", r)
	}
	if s := hr.GetInstallStrategy(); s != RemediateOnFailure {
		t.Errorf("install strategy %q", s)
	}
	if d := (*Strategy)(nil).GetRetryInterval(); d != defaultRetryInterval {
		t.Errorf("default retryInterval %s", d)
	}
}
