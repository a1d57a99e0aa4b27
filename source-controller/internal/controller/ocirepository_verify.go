package controller

import (
	"context"
	"errors"
	"fmt"

	"github.com/fluxcd/pkg/runtime/conditions"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/message"
	plumbreconcile "plumb.dev/pkg/reconcile"
	"plumb.dev/source-controller/internal/oci"
)

// reconcileVerify checks, with spec.verify, the cosign signature of the
// manifest digest the source step resolved, before the layer step pulls
// anything of it: the digest must carry a signature by a public key of
// spec.verify.secretRef over a payload that names it. Sets SourceVerified:
// True naming the key; False with VerificationError (the Secret is
// missing, unreadable or holds no usable key, or the registry failed while
// the signatures were read) or InvalidArtifactSignature (unsigned, or
// signed by no trusted key), all retried with backoff, as the Secret or
// the registry (a signature pushed after the artifact) may change. A
// refused revision gets no artifact: the previous one stays in status and
// storage. Without spec.verify the condition is removed; when nothing is
// new (see reconcileSource) nothing is checked.
func (r *OCIRepositoryReconciler) reconcileVerify(ctx context.Context, obj *sourcev1.OCIRepository, st *ociState) error {
	v := obj.Spec.Verify
	if v == nil {
		conditions.Delete(obj, sourcev1.SourceVerifiedCondition)
		return nil
	}
	if st.upToDate {
		return nil
	}
	key, err := r.verify(ctx, obj, v, st)
	if err != nil {
		var e *plumbreconcile.Error
		if errors.As(err, &e) {
			conditions.MarkFalse(obj, sourcev1.SourceVerifiedCondition, e.Reason, "%s", err.Error())
		}
		return err
	}
	conditions.MarkTrue(obj, sourcev1.SourceVerifiedCondition, meta.SucceededReason,
		"verified cosign signature of revision %s with key %s of spec.verify.secretRef", st.revision, key)
	return nil
}

// verify returns the name of the key that signed the resolved digest; its
// errors are *plumbreconcile.Error.
func (r *OCIRepositoryReconciler) verify(ctx context.Context, obj *sourcev1.OCIRepository, v *sourcev1.OCIRepositoryVerification, st *ociState) (string, error) {
	keys, err := r.cosignKeys(ctx, obj.Namespace, v.SecretRef.Name)
	if err != nil {
		return "", plumbreconcile.Failed(sourcev1.VerificationErrorReason, err)
	}
	key, err := st.client.VerifyCosign(st.digest, keys)
	switch {
	case oci.KindOf(err) == oci.Unverified:
		return "", plumbreconcile.Failed(sourcev1.InvalidArtifactSignatureReason,
			fmt.Errorf("revision %s refused, no artifact made of it: %w", st.revision, err))
	case err != nil:
		return "", plumbreconcile.Failed(sourcev1.VerificationErrorReason, errors.New(message.StripUserInfo(err.Error())))
	}
	return key, nil
}

// cosignKeys reads the public keys of the Secret name in namespace.
func (r *OCIRepositoryReconciler) cosignKeys(ctx context.Context, namespace, name string) (*oci.CosignKeys, error) {
	source := "spec.verify.secretRef: Secret " + namespace + "/" + name
	var secret corev1.Secret
	if err := r.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, &secret); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("%s not found", source)
		}
		return nil, fmt.Errorf("reading %s: %w", source, err)
	}
	return oci.ReadCosignKeys(source, secret.Data)
}
