package localenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// ProvideVolume gives the claim namespace/claim (one a StatefulSet's
// volumeClaimTemplates will make, as deploy/nats's data-nats-0) a
// PersistentVolume of the given size before it exists: a folder under the
// node's, owned by uid 65532 (the user Plumb's images run as; a hostPath
// volume gets no fsGroup), bound to that claim alone by its claimRef. A
// real node has no storage provisioner and no default StorageClass, so
// without it such a Pod stays Pending on its unbound claim. Node.Stop
// removes the folder with the node's.
func (e *Env) ProvideVolume(ctx context.Context, namespace, claim, size string) error {
	if e.Node == nil {
		return errors.New("no real node: the pod simulator needs no volume")
	}
	dir := filepath.Join(e.Node.Dir, "volumes", namespace, claim)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	if err := os.Chown(dir, nonroot, nonroot); err != nil {
		return err
	}
	qty, err := resource.ParseQuantity(size)
	if err != nil {
		return err
	}
	hostPathType := corev1.HostPathDirectory
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: namespace + "-" + claim},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: qty},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			ClaimRef:                      &corev1.ObjectReference{Namespace: namespace, Name: claim},
			PersistentVolumeSource: corev1.PersistentVolumeSource{
				HostPath: &corev1.HostPathVolumeSource{Path: dir, Type: &hostPathType},
			},
		},
	}
	return e.Client.Create(ctx, pv)
}

// RemoveVolume deletes the PersistentVolume ProvideVolume made for
// namespace/claim, waits until it is gone, and removes its folder. Once
// the claim is deleted (with its namespace, by `plumb uninstall`), the
// volume stays, Released and bound to the old claim's UID, as its Retain
// policy says: a later install's claim of the same name would never bind
// it, and ProvideVolume could not make another of that name.
func (e *Env) RemoveVolume(ctx context.Context, namespace, claim string) error {
	if e.Node == nil {
		return errors.New("no real node: the pod simulator needs no volume")
	}
	name := namespace + "-" + claim
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := e.Client.Delete(ctx, pv); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	// kube-controller-manager takes the volume's protection finalizer
	// away once no claim uses it.
	for {
		err := e.Client.Get(ctx, types.NamespacedName{Name: name}, pv)
		if apierrors.IsNotFound(err) {
			break
		}
		if err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the PersistentVolume %s is still there (finalizers %v): %w", name, pv.Finalizers, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
	return os.RemoveAll(filepath.Join(e.Node.Dir, "volumes", namespace, claim))
}

// nonroot is the user and group Plumb's images run as (pkg/imagebuild).
const nonroot = 65532
