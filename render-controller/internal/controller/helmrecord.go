package controller

import (
	"context"
	"maps"

	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "plumb.dev/api/helm/v2"
	"plumb.dev/api/meta"
	"plumb.dev/pkg/helmrender"
)

// releaseRecordSuffix ends the file name of a release record beside the
// rendered manifests.
const releaseRecordSuffix = ".release.json.gz"

// storeReleaseRecord stores the render's release record (what Helm's
// storage holds of a release that only the chart knows: its metadata and
// default values, the user's values, the manifest, hooks and notes) beside
// the manifests, and returns a, the stored render, with the record's URL
// and digest in its metadata (helmv2.ArtifactReleaseRecordKey,
// ArtifactReleaseRecordDigestKey), or why there is none
// (ArtifactReleaseRecordOmittedKey). sync-controller reads it when it
// records a release in Helm's storage. The manifests artifact itself stays
// what a Kustomization's is. Sets Rendered=False (ArtifactFailed) when
// storing fails.
func (r *HelmReleaseReconciler) storeReleaseRecord(ctx context.Context, obj *helmv2.HelmRelease, a *meta.Artifact, res *helmrender.Result) (*meta.Artifact, error) {
	md := maps.Clone(a.Metadata)
	if md == nil {
		md = map[string]string{}
	}
	delete(md, helmv2.ArtifactReleaseRecordKey)
	delete(md, helmv2.ArtifactReleaseRecordDigestKey)
	delete(md, helmv2.ArtifactReleaseRecordOmittedKey)
	if res.Record == nil {
		if res.RecordOmitted != "" {
			md[helmv2.ArtifactReleaseRecordOmittedKey] = res.RecordOmitted
		}
	} else {
		rec, err := r.store.StoreBeside(ctx, client.ObjectKeyFromObject(obj), a, releaseRecordSuffix, res.Record)
		if err != nil {
			return a, err
		}
		md[helmv2.ArtifactReleaseRecordKey] = rec.URL
		md[helmv2.ArtifactReleaseRecordDigestKey] = rec.Digest
	}
	if maps.Equal(md, a.Metadata) {
		return a, nil
	}
	a = a.DeepCopy()
	a.Metadata = md
	return a, nil
}
