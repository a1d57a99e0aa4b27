package controller

import (
	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/api/meta"
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
	return digestsOf(ks.Status.History, func(s meta.Snapshot) string { return s.Digest })
}

// releaseDigests are the digests of the renders of hr's releases in
// status.history (an adopted release has none: Plumb did not render it).
func releaseDigests(hr *helmv2.HelmRelease) []string {
	return digestsOf(hr.Status.History, func(s helmv2.Snapshot) string { return s.Digest })
}

// digestsOf lists the non-empty digests of a history's entries.
func digestsOf[T any](history []T, digest func(T) string) []string {
	out := make([]string, 0, len(history))
	for _, h := range history {
		if d := digest(h); d != "" {
			out = append(out, d)
		}
	}
	return out
}
