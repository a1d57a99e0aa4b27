package controller

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/fluxcd/pkg/runtime/conditions"

	"helm.sh/helm/v4/pkg/release/common"
	rspb "helm.sh/helm/v4/pkg/release/v1"

	helmv2 "plumb.dev/api/helm/v2"
	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/events"
	"plumb.dev/pkg/fetch"
	"plumb.dev/pkg/message"
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
// status.history[0], into Helm's storage in spec.storageNamespace
// (writeHelmRecordErr) and says how that went (storageOutcome).
func (s *syncRun) writeHelmRecord(ctx context.Context, hr *helmv2.HelmRelease) {
	s.storageOutcome(hr, s.writeHelmRecordErr(ctx, hr))
}

// storageOutcome records the outcome of bringing Helm's storage up to
// date: a failure is StorageFailed=True and a StorageFailed warning,
// and the next reconcile tries again (repairHelmStorage); a success
// removes the condition. Neither touches the release's own conditions:
// the record is what the helm CLI reads, never what Plumb applies.
func (s *syncRun) storageOutcome(hr *helmv2.HelmRelease, err error) {
	if err == nil {
		conditions.Delete(s.out, helmv2.StorageFailedCondition)
		return
	}
	msg := "the release is not recorded in Helm's storage: " + err.Error()
	conditions.MarkTrue(s.out, helmv2.StorageFailedCondition, helmv2.StorageFailedReason, "%s (tried again at the next reconcile)", message.Truncate(msg))
	s.r.Events.Record(s.obj, events.SeverityError, helmv2.StorageFailedReason, msg)
}

// repairHelmStorage is a HelmRelease's step "storage", before the
// release step: it brings Helm's storage up to date with what an earlier
// run could not write there, without a new release — the records moved
// to a new spec.storageNamespace (moveHelmRecords), and, while
// StorageFailed says so, status.history[0]'s record written again
// (writeHelmRecordErr). It never fails the run (storageOutcome).
func (s *syncRun) repairHelmStorage(ctx context.Context) error {
	hr, ok := s.out.(*helmv2.HelmRelease)
	if !ok {
		return nil
	}
	moving := hr.Status.StorageNamespace != "" && hr.Status.StorageNamespace != hr.GetStorageNamespace()
	failed := conditions.IsTrue(hr, helmv2.StorageFailedCondition)
	switch {
	case failed && len(hr.Status.History) > 0 && recorded(hr.Status.History[0]):
		s.storageOutcome(hr, s.writeHelmRecordErr(ctx, hr))
	case failed || moving:
		s.storageOutcome(hr, s.moveHelmRecords(ctx, hr))
	}
	return nil
}

// recorded says whether a release is one recordRelease or recordRollback
// writes a record of: deployed or failed (an uninstalled one is not).
func recorded(h helmv2.Snapshot) bool {
	return h.Status == helmv2.ReleaseStatusDeployed || h.Status == helmv2.ReleaseStatusFailed
}

// moveHelmRecords moves the release's records from the namespace they
// were written to (status.storageNamespace) to spec.storageNamespace
// when it changed (helmstorage.Storage.MoveTo: copied, then deleted), and
// sets status.storageNamespace to it. Acts as the sync's target, so the
// ServiceAccount needs the rights on Secrets in both namespaces.
func (s *syncRun) moveHelmRecords(ctx context.Context, hr *helmv2.HelmRelease) error {
	from, to := hr.Status.StorageNamespace, hr.GetStorageNamespace()
	if from == "" || from == to {
		return nil
	}
	if err := s.releaseStorage(hr, from).MoveTo(ctx, s.releaseStorage(hr, to)); err != nil {
		return fmt.Errorf("moving the records from namespace %s to %s (spec.storageNamespace): %w", from, to, err)
	}
	hr.Status.StorageNamespace = to
	return nil
}

// writeHelmRecordErr writes status.history[0] into Helm's storage in
// spec.storageNamespace, after moving the records there when it changed
// (a record written there while the older ones stay behind would split
// the release's history): the record render-controller stored beside
// the render, or for a rollback a copy of its target's record, with the
// release's name, namespace, version, status, times and description. It
// supersedes the deployed record before it when it is deployed, trims
// the records to spec.maxHistory and sets status.storageNamespace. It
// reads only status and the render, so a later reconcile writes the same
// record again.
func (s *syncRun) writeHelmRecordErr(ctx context.Context, hr *helmv2.HelmRelease) error {
	if len(hr.Status.History) == 0 {
		return nil
	}
	if err := s.moveHelmRecords(ctx, hr); err != nil {
		return err
	}
	h := hr.Status.History[0]
	var rel *rspb.Release
	var err error
	if target, ok := rollbackTargetOf(h); ok {
		// As `helm rollback`: the new revision is a copy of the target's
		// record (its chart, values, manifest and hooks). The newest
		// render's record is the failed release's, not the target's.
		rel, err = s.releaseStorage(hr, "").Read(ctx, target)
		if err != nil {
			return fmt.Errorf("reading revision %d to roll back to: %w", target, err)
		}
	} else if rel, err = s.releaseRecord(ctx, h); err != nil {
		return err
	}
	rel.Name, rel.Namespace, rel.Version = hr.GetReleaseName(), hr.GetReleaseNamespace(), h.Version
	rel.ApplyMethod = string(rspb.ApplyMethodServerSideApply)
	if rel.Info == nil {
		rel.Info = &rspb.Info{}
	}
	rel.Info.FirstDeployed, rel.Info.LastDeployed = h.FirstDeployed.Time, h.LastDeployed.Time
	rel.Info.Status, rel.Info.Description = helmStatus(hr, h)
	st := s.releaseStorage(hr, "")
	if err := st.Write(ctx, rel); err != nil {
		return err
	}
	hr.Status.StorageNamespace = st.Namespace
	return st.Trim(ctx, hr.GetMaxHistory())
}

// helmStatus is the status and description Helm would give the release
// h: deployed with "Install complete" or "Upgrade complete", failed with
// Helm's words for the error the history's description holds; a
// rollback's description is the history's ("Rollback to 2"), Helm's too.
// Revision 1 is the install: an adopted release's first is an upgrade of
// Helm's.
func helmStatus(hr *helmv2.HelmRelease, h helmv2.Snapshot) (common.Status, string) {
	install := h.Version == 1
	status := common.StatusFailed
	if h.Status == helmv2.ReleaseStatusDeployed {
		status = common.StatusDeployed
	}
	switch _, rollback := rollbackTargetOf(h); {
	case rollback:
		return status, h.Description
	case status == common.StatusDeployed && install:
		return status, "Install complete"
	case status == common.StatusDeployed:
		return status, "Upgrade complete"
	}
	msg := "the sync did not complete"
	if _, why, ok := strings.Cut(h.Description, " failed: "); ok {
		msg = why
	}
	if install {
		return status, fmt.Sprintf("Release %q failed: %s", hr.GetReleaseName(), msg)
	}
	return status, fmt.Sprintf("Upgrade %q failed: %s", hr.GetReleaseName(), msg)
}

// releaseRecord downloads and verifies the release record of the render
// release h applied (helmv2.ArtifactReleaseRecordKey of the current
// render, which must be h's), within maxRecordDownload, and decodes it
// within helmstorage.MaxDecodedBytes.
func (s *syncRun) releaseRecord(ctx context.Context, h helmv2.Snapshot) (*rspb.Release, error) {
	a := s.app.rendered()
	if a == nil {
		return nil, errors.New("no rendered artifact")
	}
	if a.Digest != h.Digest {
		return nil, fmt.Errorf("the render of release v%d (%s) is no longer the current one, whose record the next release writes", h.Version, h.Digest)
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
