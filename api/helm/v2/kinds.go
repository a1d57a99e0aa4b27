package v2

import "plumb.dev/api/meta"

// The kind facts of api/meta for HelmRelease that are not a plain field of
// their own name; kindgen writes the others (zz_generated.kinds.go).

// GetArtifact returns the rendered manifests it serves
// (status.renderedArtifact).
func (in *HelmRelease) GetArtifact() *meta.Artifact { return in.Status.RenderedArtifact }

// GetLastAppliedRevision returns the revision last applied successfully.
func (in *HelmRelease) GetLastAppliedRevision() string { return in.Status.LastAppliedRevision }
