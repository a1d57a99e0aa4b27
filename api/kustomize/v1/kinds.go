package v1

import (
	"time"

	"plumb.dev/api/meta"
)

// The kind facts of api/meta for Kustomization; GetRetryInterval sits
// with the type.

// GetRequeueAfter returns the interval between two reconciles.
func (in *Kustomization) GetRequeueAfter() time.Duration { return in.Spec.Interval.Duration }

// IsSuspended says whether spec.suspend stops the reconciles.
func (in *Kustomization) IsSuspended() bool { return in.Spec.Suspend }

// GetArtifact returns the rendered manifests it serves
// (status.renderedArtifact).
func (in *Kustomization) GetArtifact() *meta.Artifact { return in.Status.RenderedArtifact }

// GetLastAppliedRevision returns the revision last applied successfully.
func (in *Kustomization) GetLastAppliedRevision() string { return in.Status.LastAppliedRevision }
