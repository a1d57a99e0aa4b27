package controller

import (
	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
)

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

// lastSyncedDigest is the digest of the render of ks's newest sync
// (status.history[0]): while a sync window holds a newer render,
// sync-controller applies that one again to correct drift, so its file
// outlives --artifact-retention-records.
func lastSyncedDigest(ks *kustomizev1.Kustomization) []string {
	if len(ks.Status.History) == 0 || ks.Status.History[0].Digest == "" {
		return nil
	}
	return []string{ks.Status.History[0].Digest}
}
