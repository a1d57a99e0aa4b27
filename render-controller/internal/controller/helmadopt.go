package controller

import (
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	helmv2 "plumb.dev/api/helm/v2"
	"plumb.dev/api/meta"
)

// A release made before its HelmRelease existed — by the helm CLI or by
// Flux's helm-controller — is adopted: sync-controller finds it in Helm's
// storage and records it as status.history[0] (a release with no render
// of Plumb's, Digest empty) before it applies anything. render-controller
// cannot read Helm's storage (it reads Secrets only by the names a spec
// gives), so its first render of such a HelmRelease is an install's; the
// adopted entry tells it that Helm would upgrade, and it renders again
// with .Release.IsUpgrade, upgrade.crds and the next revision — the hooks
// of an upgrade, not an install's, are what sync-controller then runs.

// releaseAction is what a render made now is for: the values of
// helmv2.ArtifactReleaseActionKey.
func releaseAction(installing bool) string {
	if installing {
		return helmv2.ReleaseActionInstall
	}
	return helmv2.ReleaseActionUpgrade
}

// nextRevision is .Release.Revision of a render made now: one more than
// the newest release of the history, the version sync-controller gives the
// release it makes of the render (unless Helm's storage holds a newer one,
// made by hand since).
func nextRevision(hr *helmv2.HelmRelease) int {
	if len(hr.Status.History) == 0 {
		return 1
	}
	return hr.Status.History[0].Version + 1
}

// installRenderOutgrown says whether the stored render a was made for an
// install while a release is now deployed that is not of a's making: one
// adopted since. Plumb's own install of a leaves history[0] with a's
// digest, and that never renders again (the move from install to upgrade
// alone changes nothing; see reconcileHelmCache).
func installRenderOutgrown(hr *helmv2.HelmRelease, a *meta.Artifact) bool {
	if a == nil || a.Metadata[helmv2.ArtifactReleaseActionKey] != helmv2.ReleaseActionInstall || installing(hr) {
		return false
	}
	for _, h := range hr.Status.History {
		if h.Digest == a.Digest {
			return false
		}
	}
	return true
}

// installStateChanged passes the update in which a HelmRelease's history
// gained or lost its deployed release: an adoption, which may outgrow the
// stored install render (installRenderOutgrown). Plumb's own installs
// pass too and end at the cache.
type installStateChanged struct{ predicate.Funcs }

func (installStateChanged) Update(e event.UpdateEvent) bool {
	old, oldOK := e.ObjectOld.(*helmv2.HelmRelease)
	cur, curOK := e.ObjectNew.(*helmv2.HelmRelease)
	return oldOK && curOK && installing(old) != installing(cur)
}

func (installStateChanged) Create(event.CreateEvent) bool   { return false }
func (installStateChanged) Delete(event.DeleteEvent) bool   { return false }
func (installStateChanged) Generic(event.GenericEvent) bool { return false }
