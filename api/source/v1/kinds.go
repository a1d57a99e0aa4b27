package v1

import (
	"time"

	"plumb.dev/api/meta"
)

// The kind facts of api/meta (Scheduled, Suspendable, ArtifactHolder) for
// the source kinds; GetRequeueAfter of GitRepository, HelmRepository and
// HelmChart sit with their types.

// GetRequeueAfter returns the interval between two resolutions of spec.ref.
func (in *OCIRepository) GetRequeueAfter() time.Duration { return in.Spec.Interval.Duration }

// GetRequeueAfter returns the interval between two listings of the bucket.
func (in *Bucket) GetRequeueAfter() time.Duration { return in.Spec.Interval.Duration }

// IsSuspended says whether spec.suspend stops the reconciles.
func (in *GitRepository) IsSuspended() bool { return in.Spec.Suspend }

// IsSuspended says whether spec.suspend stops the reconciles.
func (in *HelmRepository) IsSuspended() bool { return in.Spec.Suspend }

// IsSuspended says whether spec.suspend stops the reconciles.
func (in *HelmChart) IsSuspended() bool { return in.Spec.Suspend }

// IsSuspended says whether spec.suspend stops the reconciles.
func (in *OCIRepository) IsSuspended() bool { return in.Spec.Suspend }

// IsSuspended says whether spec.suspend stops the reconciles.
func (in *Bucket) IsSuspended() bool { return in.Spec.Suspend }

// GetArtifact returns status.artifact.
func (in *GitRepository) GetArtifact() *meta.Artifact { return in.Status.Artifact }

// GetArtifact returns status.artifact: the index.
func (in *HelmRepository) GetArtifact() *meta.Artifact { return in.Status.Artifact }

// GetArtifact returns status.artifact: the packaged chart.
func (in *HelmChart) GetArtifact() *meta.Artifact { return in.Status.Artifact }

// GetArtifact returns status.artifact.
func (in *OCIRepository) GetArtifact() *meta.Artifact { return in.Status.Artifact }

// GetArtifact returns status.artifact.
func (in *Bucket) GetArtifact() *meta.Artifact { return in.Status.Artifact }

// GetArtifact returns status.artifact, as its producer wrote it.
func (in *ExternalArtifact) GetArtifact() *meta.Artifact { return in.Status.Artifact }
