package controller

import helmv2 "plumb.dev/api/helm/v2"

// deployedDigests are the digests of the renders of hr's deployed
// releases (status.history): sync-controller's rollback remediation
// downloads the newest of them again after a failed upgrade, so their
// files outlive --artifact-retention-records.
func deployedDigests(hr *helmv2.HelmRelease) []string {
	var out []string
	for _, s := range hr.Status.History {
		if s.Status == helmv2.ReleaseStatusDeployed && s.Digest != "" {
			out = append(out, s.Digest)
		}
	}
	return out
}
