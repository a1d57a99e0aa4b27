package v2

import (
	"time"

	"plumb.dev/api/meta"
)

// The kind facts of api/meta for HelmRelease.

// GetRequeueAfter returns the interval between two reconciles.
func (in *HelmRelease) GetRequeueAfter() time.Duration { return in.Spec.Interval.Duration }

// IsSuspended says whether spec.suspend stops the reconciles.
func (in *HelmRelease) IsSuspended() bool { return in.Spec.Suspend }

// GetArtifact returns the rendered manifests it serves
// (status.renderedArtifact).
func (in *HelmRelease) GetArtifact() *meta.Artifact { return in.Status.RenderedArtifact }

// GetLastAppliedRevision returns the revision last applied successfully.
func (in *HelmRelease) GetLastAppliedRevision() string { return in.Status.LastAppliedRevision }
