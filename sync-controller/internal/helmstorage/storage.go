package helmstorage

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"

	"helm.sh/helm/v4/pkg/release/common"
	rspb "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// storageType starts the name of every release Secret; Helm 3's and 4's
// (the SDK's storage.HelmStorageType).
const storageType = "sh.helm.release.v1"

// Key is the name of the Secret of a release's version.
func Key(release string, version int) string {
	return fmt.Sprintf("%s.%s.v%d", storageType, release, version)
}

// Storage is the records of one release in one namespace.
type Storage struct {
	Client client.Client
	// Reader, when set, reads the records instead of Client: the API
	// server itself where Client reads a cache, which would miss a record
	// just written (and hold every Secret of the cluster).
	Reader    client.Reader
	Namespace string
	Release   string
}

// Entry is what a record's labels say of it.
type Entry struct {
	Version int
	Status  common.Status
}

// reader is what reads the records: Reader, else Client.
func (s Storage) reader() client.Reader {
	if s.Reader != nil {
		return s.Reader
	}
	return s.Client
}

// driver is the SDK's Secret driver over s.Client, within ctx.
func (s Storage) driver(ctx context.Context) *driver.Secrets {
	return driver.NewSecrets(&secrets{ctx: ctx, c: s.Client, r: s.reader(), namespace: s.Namespace})
}

// List returns the release's records as their labels say, oldest first.
// A Secret of the release whose version label is not a number is no
// record Helm would read either, and is left out.
func (s Storage) List(ctx context.Context) ([]Entry, error) {
	var list corev1.SecretList
	if err := s.reader().List(ctx, &list, client.InNamespace(s.Namespace),
		client.MatchingLabels{"name": s.Release, "owner": "helm"}); err != nil {
		return nil, fmt.Errorf("listing the records of release %s/%s: %w", s.Namespace, s.Release, err)
	}
	var out []Entry
	for _, sec := range list.Items {
		v, err := strconv.Atoi(sec.Labels["version"])
		if err != nil || v <= 0 || sec.Name != Key(s.Release, v) {
			continue
		}
		out = append(out, Entry{Version: v, Status: common.Status(sec.Labels["status"])})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	return out, nil
}

// Latest returns the newest record's entry, and false when there is none.
func (s Storage) Latest(ctx context.Context) (Entry, bool, error) {
	entries, err := s.List(ctx)
	if err != nil || len(entries) == 0 {
		return Entry{}, false, err
	}
	return entries[len(entries)-1], true, nil
}

// Read returns the record of one version; an error wrapping
// driver.ErrReleaseNotFound when there is none.
func (s Storage) Read(ctx context.Context, version int) (*rspb.Release, error) {
	r, err := s.driver(ctx).Get(Key(s.Release, version))
	if err != nil {
		return nil, err
	}
	rel, ok := r.(*rspb.Release)
	if !ok {
		return nil, fmt.Errorf("record %s is not a release of Helm's v1 format", Key(s.Release, version))
	}
	return rel, nil
}

// Write stores rel as its version's record, creating it or replacing it
// (a failed release retried, or succeeding, is the same version). When
// rel is deployed, every other deployed record becomes superseded, as
// Helm leaves one deployed release.
func (s Storage) Write(ctx context.Context, rel *rspb.Release) error {
	key := Key(s.Release, rel.Version)
	err := s.put(ctx, key, rel, true)
	if apierrors.IsAlreadyExists(err) {
		err = s.put(ctx, key, rel, false)
	}
	if err != nil {
		return fmt.Errorf("writing %s/%s: %w", s.Namespace, key, err)
	}
	if rel.Info == nil || rel.Info.Status != common.StatusDeployed {
		return nil
	}
	entries, err := s.List(ctx)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.Version == rel.Version || e.Status != common.StatusDeployed {
			continue
		}
		if err := s.setStatus(ctx, e.Version, common.StatusSuperseded); err != nil {
			return err
		}
	}
	return nil
}

// put creates (create) or replaces the record key of rel, encoded as the
// SDK's driver does (encode.go); an update replaces the whole Secret
// without a resourceVersion, as the driver's does.
func (s Storage) put(ctx context.Context, key string, rel *rspb.Release, create bool) error {
	if rel.Info == nil {
		return fmt.Errorf("release %s version %d has no info", rel.Name, rel.Version)
	}
	sec, err := newRecordSecret(key, rel, create, time.Now())
	if err != nil {
		return fmt.Errorf("encoding the release: %w", err)
	}
	sec.Namespace = s.Namespace
	if create {
		return s.Client.Create(ctx, sec)
	}
	return s.Client.Update(ctx, sec)
}

// setStatus rewrites one record with another status.
func (s Storage) setStatus(ctx context.Context, version int, status common.Status) error {
	old, err := s.Read(ctx, version)
	if err != nil {
		if errors.Is(err, driver.ErrReleaseNotFound) {
			return nil
		}
		return err
	}
	old.SetStatus(status, old.Info.Description)
	if err := s.put(ctx, Key(s.Release, version), old, false); err != nil {
		return fmt.Errorf("marking %s/%s %s: %w", s.Namespace, Key(s.Release, version), status, err)
	}
	return nil
}

// Trim deletes the oldest records until max are left (0 keeps them all),
// never the newest deployed one, as Helm trims (--history-max): the
// record of what runs stays however many failed releases follow it.
func (s Storage) Trim(ctx context.Context, max int) error {
	if max <= 0 {
		return nil
	}
	entries, err := s.List(ctx)
	if err != nil {
		return err
	}
	deployed := 0
	for _, e := range entries {
		if e.Status == common.StatusDeployed {
			deployed = e.Version
		}
	}
	over := len(entries) - max
	for _, e := range entries {
		if over <= 0 {
			break
		}
		if e.Version == deployed {
			continue
		}
		if err := s.delete(ctx, e.Version); err != nil {
			return err
		}
		over--
	}
	return nil
}

// DeleteAll deletes every record of the release: the HelmRelease is gone,
// as `helm uninstall` without --keep-history leaves none.
func (s Storage) DeleteAll(ctx context.Context) error {
	entries, err := s.List(ctx)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := s.delete(ctx, e.Version); err != nil {
			return err
		}
	}
	return nil
}

// delete deletes one record by name, without decoding it; one already
// gone is no error.
func (s Storage) delete(ctx context.Context, version int) error {
	sec := &corev1.Secret{}
	sec.Namespace, sec.Name = s.Namespace, Key(s.Release, version)
	if err := s.Client.Delete(ctx, sec); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting %s/%s: %w", s.Namespace, sec.Name, err)
	}
	return nil
}
