package localenv

import (
	"context"
	"errors"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// nonroot is the user and group Plumb's images run as (pkg/imagebuild).
const nonroot = 65532
