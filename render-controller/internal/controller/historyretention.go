package controller

import (
	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
)

// The renders status.history names outlive --artifact-retention-records:
// sync-controller downloads them again, from the folder of the current
// render and by the digest the history records, for a rollback — a
// person's (plumb.dev/rollback, plumb rollback) to any entry, or a
// HelmRelease's rollback remediation to its newest deployed release. The
// history is bounded (MaxHistory entries), so are the files kept; a render
// that leaves it goes at the next store's garbage collection.

// historyDigests are the digests of the renders of ks's status.history.
func historyDigests(ks *kustomizev1.Kustomization) []string {
	out := make([]string, 0, len(ks.Status.History))
	for _, s := range ks.Status.History {
		if s.Digest != "" {
			out = append(out, s.Digest)
		}
	}
	return out
}

// releaseDigests are the digests of the renders of hr's releases in
// status.history (an adopted release has none: Plumb did not render it).
func releaseDigests(hr *helmv2.HelmRelease) []string {
	out := make([]string, 0, len(hr.Status.History))
	for _, s := range hr.Status.History {
		if s.Digest != "" {
			out = append(out, s.Digest)
		}
	}
	return out
}
