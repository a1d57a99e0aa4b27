package helmstorage

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// MoveTo moves every record of the release to dst (the same release in
// another namespace: spec.storageNamespace changed), as a user changing
// the namespace expects `helm list -n <new>` to show the release and the
// old namespace to hold nothing of it. Each record is copied as it is —
// the Secret's type, labels and data, not decoded and encoded again, so
// the move is exact and reads nothing the SDK would have to bound — and
// only once every record is in dst are the ones here deleted: a move that
// fails halfway leaves every record here, and the next MoveTo starts
// again (a record already in dst is overwritten with this one).
func (s Storage) MoveTo(ctx context.Context, dst Storage) error {
	if dst.Namespace == s.Namespace {
		return nil
	}
	entries, err := s.List(ctx)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := s.copyTo(ctx, dst, e.Version); err != nil {
			return err
		}
	}
	return s.DeleteAll(ctx)
}

// copyTo writes the record of one version into dst's namespace; one gone
// meanwhile is skipped.
func (s Storage) copyTo(ctx context.Context, dst Storage, version int) error {
	key := Key(s.Release, version)
	src := &corev1.Secret{}
	if err := s.reader().Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: key}, src); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("reading %s/%s to move it: %w", s.Namespace, key, err)
	}
	cp := &corev1.Secret{Type: src.Type, Data: src.Data}
	cp.Namespace, cp.Name, cp.Labels = dst.Namespace, key, src.Labels
	err := dst.Client.Create(ctx, cp)
	if apierrors.IsAlreadyExists(err) {
		existing := &corev1.Secret{}
		if err = dst.reader().Get(ctx, client.ObjectKeyFromObject(cp), existing); err == nil {
			existing.Labels, existing.Data = src.Labels, src.Data
			err = dst.Client.Update(ctx, existing)
		}
	}
	if err != nil {
		return fmt.Errorf("moving %s/%s to namespace %s: %w", s.Namespace, key, dst.Namespace, err)
	}
	return nil
}
