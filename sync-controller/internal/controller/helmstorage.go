package controller

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"helm.sh/helm/v4/pkg/release/common"
	rspb "helm.sh/helm/v4/pkg/release/v1"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/events"
	"plumb.dev/pkg/fetch"
	"plumb.dev/sync-controller/internal/helmstorage"
	"plumb.dev/sync-controller/internal/target"
)

// maxRecordDownload bounds the download of a release record: a record
// that fits in a release Secret (render-controller keeps it within
// helmrender.MaxRecordBytes) is smaller.
const maxRecordDownload = 1 << 20

// releaseStorage is the release records of hr in Helm's storage, as the
// sync's target (its cluster and ServiceAccount) reads and writes them:
// a HelmRelease can write records only where its ServiceAccount may
// write Secrets. namespace is where they are, "" for
// spec.storageNamespace (defaulted).
func (s *syncRun) releaseStorage(hr *helmv2.HelmRelease, namespace string) helmstorage.Storage {
	if namespace == "" {
		namespace = hr.GetStorageNamespace()
	}
	st := helmstorage.Storage{Client: s.target.Engine.Client(), Namespace: namespace, Release: hr.GetReleaseName()}
	if s.r != nil && st.Client == s.r.Client {
		// The manager's client reads a cache; the controller's own
		// identity reads the API server through Reader.
		st.Reader = s.r.Reader
	}
	return st
}

// continueHelmVersion returns the version of a new release: version
// (Plumb's history's next), or one more than the newest record of the
// release in Helm's storage when that is as new or newer — a release the
// helm CLI or Flux's helm-controller made before this HelmRelease existed
// (adoption: an Adopted event says so), or a helm upgrade or rollback by
// hand since the last release (drift, which this release reverts). A
// storage that cannot be read leaves version, with a StorageFailed
// warning.
func (s *syncRun) continueHelmVersion(ctx context.Context, hr *helmv2.HelmRelease, version int) int {
	latest, found, err := s.releaseStorage(hr, "").Latest(ctx)
	if err != nil {
		s.r.Events.Record(s.obj, events.SeverityError, helmv2.StorageFailedReason, err.Error())
		return version
	}
	if !found || latest.Version < version {
		return version
	}
	if len(hr.Status.History) == 0 {
		s.r.Events.Record(s.obj, events.SeverityInfo, helmv2.AdoptedReason, fmt.Sprintf(
			"adopted release %s/%s at revision %d (%s in Helm's storage): its objects are taken over in place, and this release is revision %d",
			hr.GetStorageNamespace(), hr.GetReleaseName(), latest.Version, latest.Status, latest.Version+1))
	}
	return latest.Version + 1
}

// writeHelmRecord writes the release recordRelease recorded,
// status.history[0], into Helm's storage in spec.storageNamespace (the
// record render-controller stored beside the render, with the release's
// name, namespace, version, status, times and description), supersedes
// the deployed record before it when it is deployed, trims the records
// to spec.maxHistory and sets status.storageNamespace. A failure is a
// StorageFailed warning: the record is what the helm CLI reads, never
// what Plumb applies, so the release itself is what status says.
func (s *syncRun) writeHelmRecord(ctx context.Context, hr *helmv2.HelmRelease) {
	if err := s.writeHelmRecordErr(ctx, hr); err != nil {
		s.r.Events.Record(s.obj, events.SeverityError, helmv2.StorageFailedReason,
			"the release is not recorded in Helm's storage: "+err.Error())
	}
}

func (s *syncRun) writeHelmRecordErr(ctx context.Context, hr *helmv2.HelmRelease) error {
	if len(hr.Status.History) == 0 {
		return nil
	}
	h := hr.Status.History[0]
	var rel *rspb.Release
	var err error
	if s.rel != nil && s.rel.action == rollbackRelease {
		// As `helm rollback`: the new revision is a copy of the target's
		// record (its chart, values, manifest and hooks). The newest
		// render's record is the failed release's, not the target's.
		rel, err = s.releaseStorage(hr, "").Read(ctx, s.rel.target.Version)
		if err != nil {
			return fmt.Errorf("reading revision %d to roll back to: %w", s.rel.target.Version, err)
		}
	} else if rel, err = s.releaseRecord(ctx); err != nil {
		return err
	}
	rel.Name, rel.Namespace, rel.Version = hr.GetReleaseName(), hr.GetReleaseNamespace(), h.Version
	rel.ApplyMethod = string(rspb.ApplyMethodServerSideApply)
	if rel.Info == nil {
		rel.Info = &rspb.Info{}
	}
	rel.Info.FirstDeployed, rel.Info.LastDeployed = h.FirstDeployed.Time, h.LastDeployed.Time
	rel.Info.Status, rel.Info.Description = helmStatus(s, hr, h)
	if s.rel != nil && s.rel.action == rollbackRelease {
		// The history's description is Helm's ("Rollback to 2").
		rel.Info.Description = h.Description
	}
	st := s.releaseStorage(hr, "")
	if err := st.Write(ctx, rel); err != nil {
		return err
	}
	hr.Status.StorageNamespace = st.Namespace
	return st.Trim(ctx, hr.GetMaxHistory())
}

// helmStatus is the status and description Helm would give the release:
// deployed with "Install complete" or "Upgrade complete", or failed with
// the error.
func helmStatus(s *syncRun, hr *helmv2.HelmRelease, h helmv2.Snapshot) (common.Status, string) {
	// An adopted release's first is an upgrade of Helm's.
	install := s.install && h.Version == 1
	if h.Status == helmv2.ReleaseStatusDeployed {
		if install {
			return common.StatusDeployed, "Install complete"
		}
		return common.StatusDeployed, "Upgrade complete"
	}
	msg := "the sync did not complete"
	if s.op.err != nil {
		msg = s.op.err.Error()
	}
	if install {
		return common.StatusFailed, fmt.Sprintf("Release %q failed: %s", hr.GetReleaseName(), msg)
	}
	return common.StatusFailed, fmt.Sprintf("Upgrade %q failed: %s", hr.GetReleaseName(), msg)
}

// releaseRecord downloads and verifies the release record of the render
// this run applied (helmv2.ArtifactReleaseRecordKey), within
// maxRecordDownload, and decodes it within
// helmstorage.MaxDecodedBytes.
func (s *syncRun) releaseRecord(ctx context.Context) (*rspb.Release, error) {
	a := s.app.rendered()
	if a == nil {
		return nil, errors.New("no rendered artifact")
	}
	url, digest := a.Metadata[helmv2.ArtifactReleaseRecordKey], a.Metadata[helmv2.ArtifactReleaseRecordDigestKey]
	if url == "" {
		if why := a.Metadata[helmv2.ArtifactReleaseRecordOmittedKey]; why != "" {
			return nil, errors.New(why)
		}
		return nil, fmt.Errorf("render %s has no release record", a.Digest)
	}
	opts := s.r.Fetch
	opts.MaxSize = maxRecordDownload
	data, err := fetch.Bytes(ctx, url, digest, opts)
	if err != nil {
		return nil, fmt.Errorf("downloading the release record: %w", err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("reading the release record: %w", err)
	}
	defer zr.Close()
	j, err := io.ReadAll(io.LimitReader(zr, helmstorage.MaxDecodedBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading the release record: %w", err)
	}
	if int64(len(j)) > helmstorage.MaxDecodedBytes {
		return nil, fmt.Errorf("the release record decompresses to more than %d bytes", helmstorage.MaxDecodedBytes)
	}
	rel := &rspb.Release{}
	if err := json.Unmarshal(j, rel); err != nil {
		return nil, fmt.Errorf("decoding the release record: %w", err)
	}
	if rel.Chart == nil || rel.Chart.Metadata == nil {
		return nil, errors.New("the release record has no chart metadata")
	}
	return rel, nil
}

// keepReleaseRecords says whether the deletion of hr leaves its records
// in Helm's storage (uninstall.keepHistory, when the API has it); the
// seam for it.
var keepReleaseRecords = func(*helmv2.HelmRelease) bool { return false }

// deleteReleaseRecords deletes the records of a deleted HelmRelease from
// Helm's storage (status.storageNamespace, else spec's), as helm
// uninstall does, once its objects are gone — unless keepReleaseRecords,
// or its objects were left (suspended, its ServiceAccount gone), so the
// records still describe what runs. Acts as the sync's target. A failure
// is a StorageFailed warning, not a held deletion: a record is no object
// anything runs.
func (r *Syncer) deleteReleaseRecords(ctx context.Context, app application) {
	hr, ok := app.object().(*helmv2.HelmRelease)
	if !ok || keepReleaseRecords(hr) || app.spec().Suspend {
		return
	}
	fail := func(err error) {
		r.Events.Record(hr, events.SeverityError, helmv2.StorageFailedReason,
			"the release's records in Helm's storage are left: "+err.Error())
	}
	if _, gone, err := r.targets.ServiceAccountGone(ctx, targetOf(app)); err != nil || gone {
		return
	}
	t, err := r.targets.Resolve(ctx, targetOf(app))
	if err != nil {
		if hr.GetAnnotations()[kustomizev1.ForceDeleteAnnotation] != kustomizev1.EnabledValue {
			fail(err)
		}
		return
	}
	s := &syncRun{target: t}
	if err := s.releaseStorage(hr, hr.Status.StorageNamespace).DeleteAll(ctx); err != nil {
		fail(err)
	}
}

// readRelease returns the record of one version of hr's release from
// Helm's storage (status.storageNamespace, else spec's) as t, the sync's
// target, reads it: the manifest, hooks and values of a past release,
// for whatever needs them (a rollback). An error wraps the SDK's
// driver.ErrReleaseNotFound when that version has no record.
func readRelease(ctx context.Context, t target.Target, hr *helmv2.HelmRelease, version int) (*rspb.Release, error) {
	s := &syncRun{target: t}
	return s.releaseStorage(hr, hr.Status.StorageNamespace).Read(ctx, version)
}
