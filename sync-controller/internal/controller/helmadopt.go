package controller

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"helm.sh/helm/v4/pkg/release/common"
	rspb "helm.sh/helm/v4/pkg/release/v1"

	helmv2 "plumb.dev/api/helm/v2"
	"plumb.dev/api/meta"
	"plumb.dev/pkg/events"
	"plumb.dev/pkg/reconcile"
)

// adoptHelmRelease is a HelmRelease's step "adopt", before the release: a
// HelmRelease with no history whose render is an install's
// (helmv2.ArtifactReleaseActionKey), while Helm's storage holds a deployed
// release of its name — one the helm CLI or Flux's helm-controller made —
// takes that release over as status.history[0], with an Adopted event,
// and applies nothing: Helm would upgrade that release, with the
// upgrade's hooks, .Release.IsUpgrade and upgrade.crds, and
// render-controller renders it again so once it sees the adopted entry.
// The run waits for that render (Reconciling, reason Adopted); the release
// made of it is the next version of Helm's.
//
// A storage that cannot be read adopts nothing (a StorageFailed warning):
// the release goes on as an install and continueHelmVersion still numbers
// it after Helm's newest record once the storage reads again. Renders
// that say nothing of their action (made before the key existed) are
// applied as before.
func (s *syncRun) adoptHelmRelease(ctx context.Context) error {
	hr, ok := s.out.(*helmv2.HelmRelease)
	if !ok || len(hr.Status.History) > 0 {
		return nil
	}
	if releaseActionOf(hr.Status.RenderedArtifact) != helmv2.ReleaseActionInstall {
		return nil
	}
	rel, found, err := s.deployedHelmRecord(ctx, hr)
	if err != nil {
		s.r.Events.Record(s.obj, events.SeverityError, helmv2.StorageFailedReason, err.Error())
		return nil
	}
	if !found {
		return nil
	}
	h := adoptedSnapshot(hr, rel)
	hr.Status.History = []helmv2.Snapshot{h}
	hr.Status.StorageNamespace = hr.GetStorageNamespace()
	s.install = false
	msg := fmt.Sprintf("adopted release %s/%s at revision %d (%s@%s, deployed in Helm's storage): its next release, revision %d, is an upgrade, rendered as one",
		hr.GetStorageNamespace(), hr.GetReleaseName(), h.Version, h.ChartName, h.ChartVersion, h.Version+1)
	s.r.Events.Record(s.obj, events.SeverityInfo, helmv2.AdoptedReason, msg)
	return reconcile.Progressing(helmv2.AdoptedReason, fmt.Errorf("%s; waiting for render-controller's upgrade render", msg))
}

// releaseActionOf is what a render was made for: a HelmRelease's
// helmv2.ArtifactReleaseActionKey, "" for a Kustomization's.
func releaseActionOf(a *meta.Artifact) string {
	if a == nil {
		return ""
	}
	return a.Metadata[helmv2.ArtifactReleaseActionKey]
}

// deployedHelmRecord reads the newest deployed record of hr's release in
// Helm's storage (spec.storageNamespace), as the sync's target reads it.
func (s *syncRun) deployedHelmRecord(ctx context.Context, hr *helmv2.HelmRelease) (*rspb.Release, bool, error) {
	st := s.releaseStorage(hr, "")
	entries, err := st.List(ctx)
	if err != nil {
		return nil, false, err
	}
	for i := len(entries) - 1; i >= 0; i-- {
		if entries[i].Status != common.StatusDeployed {
			continue
		}
		rel, err := st.Read(ctx, entries[i].Version)
		if err != nil {
			return nil, false, fmt.Errorf("reading release %s/%s v%d for its adoption: %w", st.Namespace, st.Release, entries[i].Version, err)
		}
		return rel, true, nil
	}
	return nil, false, nil
}

// adoptedSnapshot is the history entry of a release Plumb did not make:
// Helm's record's version, chart, values digest, times and description,
// and no digest — there is no render of Plumb's to roll back to.
func adoptedSnapshot(hr *helmv2.HelmRelease, rel *rspb.Release) helmv2.Snapshot {
	h := helmv2.Snapshot{
		Version: rel.Version, Name: hr.GetReleaseName(), Namespace: hr.GetReleaseNamespace(),
		ConfigDigest: helmv2.ConfigDigest(rel.Config), Status: helmv2.ReleaseStatusDeployed,
	}
	if rel.Chart != nil && rel.Chart.Metadata != nil {
		h.ChartName, h.ChartVersion = rel.Chart.Metadata.Name, rel.Chart.Metadata.Version
	}
	if rel.Info != nil {
		h.FirstDeployed, h.LastDeployed = metav1.NewTime(rel.Info.FirstDeployed), metav1.NewTime(rel.Info.LastDeployed)
		h.Description = rel.Info.Description
	}
	return h
}
