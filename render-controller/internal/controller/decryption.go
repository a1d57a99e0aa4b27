package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/decrypt"
	plumbreconcile "plumb.dev/pkg/reconcile"
	"plumb.dev/pkg/render"
	"plumb.dev/pkg/renderworker"
)

// pkg/decrypt's Decryptor is what pkg/render decrypts with.
var _ render.Decryptor = (*decrypt.Decryptor)(nil)

// reconcileDecryption reads the keys of spec.decryption.secretRef, a Secret
// in the Kustomization's namespace, as render-controller itself (uncached,
// like the substituteFrom Secrets: the manager caches no Secret), and
// parses its .agekey and .asc entries (pkg/decrypt). Without
// spec.decryption it does nothing. Sets Rendered=False with reason
// DecryptionFailed when the Secret is missing or a key does not parse; the
// last good render stays in status.
func (r *KustomizationReconciler) reconcileDecryption(ctx context.Context, obj *kustomizev1.Kustomization, st *state) error {
	dec := obj.Spec.Decryption
	if dec == nil {
		return nil
	}
	if dec.SecretRef == nil {
		// Flux accepts a decryption without keys (its cloud KMS clients
		// may need none); here every encrypted file then fails, saying so.
		st.keys = &renderworker.Decryption{Secret: "(none: spec.decryption.secretRef is not set)"}
		st.keysDigest = "none"
		return nil
	}
	key := types.NamespacedName{Namespace: obj.Namespace, Name: dec.SecretRef.Name}
	var secret corev1.Secret
	if err := r.Get(ctx, key, &secret); err != nil {
		if apierrors.IsNotFound(err) {
			return plumbreconcile.Failed(kustomizev1.DecryptionFailedReason,
				fmt.Errorf("decryption Secret %s (spec.decryption.secretRef) not found", key))
		}
		return fmt.Errorf("reading the decryption Secret %s: %w", key, err)
	}
	// Parsed here to fail early with the Secret's own error; the render
	// worker parses them again, so no parsed key crosses to it.
	if _, err := decrypt.ParseKeys(key.String(), secret.Data); err != nil {
		return plumbreconcile.Failed(kustomizev1.DecryptionFailedReason, err)
	}
	st.keys = &renderworker.Decryption{Secret: key.String(), Data: secret.Data}
	st.keysDigest = keysDigest(secret.Data)
	return nil
}

// keysDigest hashes a decryption Secret's data for the render's cache key:
// new keys render again. Only the hash is kept, in memory.
func keysDigest(data map[string][]byte) string {
	names := make([]string, 0, len(data))
	for k := range data {
		names = append(names, k)
	}
	sort.Strings(names)
	h := sha256.New()
	for _, k := range names {
		fmt.Fprintf(h, "%d:%s=%d:", len(k), k, len(data[k]))
		h.Write(data[k])
	}
	return hex.EncodeToString(h.Sum(nil))
}
