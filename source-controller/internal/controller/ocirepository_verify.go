package controller

import (
	"context"
	"errors"
	"fmt"

	"github.com/fluxcd/pkg/runtime/conditions"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/message"
	plumbreconcile "plumb.dev/pkg/reconcile"
	"plumb.dev/source-controller/internal/oci"
)

// reconcileVerify checks, with spec.verify, the signatures of the manifest
// digest the source step resolved, before the layer step pulls anything
// of it: for cosign, a signature by a public key of spec.verify.secretRef
// over a payload that names the digest; for notation, a signature that
// the Secret's trust policy accepts, by a certificate chaining to one of
// its certificates. Sets SourceVerified: True naming the key or the
// certificate; False with VerificationError (the Secret is missing,
// unreadable or holds nothing usable, its trust policy has no statement
// for the repository, or the registry failed while the signatures were
// read) or InvalidArtifactSignature (unsigned, or signed by no one
// trusted), all retried with backoff, as the Secret or
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
	signer, err := r.verify(ctx, obj, v, st)
	if err != nil {
		return markVerified(obj, "", err)
	}
	return markVerified(obj, fmt.Sprintf("verified %s signature of revision %s with %s", v.GetProvider(), st.revision, signer), nil)
}

// verify returns what signed the resolved digest (a key of the Secret, a
// certificate); its errors are *plumbreconcile.Error.
func (r *OCIRepositoryReconciler) verify(ctx context.Context, obj *sourcev1.OCIRepository, v *sourcev1.OCIRepositoryVerification, st *ociState) (string, error) {
	return verifySignature(ctx, r.Client, obj.Namespace, v, st.client, st.digest, "revision "+st.revision)
}

// verifySignature checks, for spec.verify v of an object in namespace,
// the signatures of the manifest digest in c's repository, and returns
// what signed it (a key of the Secret, a certificate). what names the
// digest in messages ("revision v1@sha256:…"). Its errors are
// *plumbreconcile.Error: VerificationError when the Secret or the
// registry failed, InvalidArtifactSignature when no trusted signature was
// found. OCIRepository and HelmChart share it.
func verifySignature(ctx context.Context, cl client.Reader, namespace string, v *sourcev1.OCIRepositoryVerification, c *oci.Client, digest v1.Hash, what string) (string, error) {
	data, source, err := verificationSecret(ctx, cl, namespace, v.SecretRef.Name)
	if err != nil {
		return "", plumbreconcile.Failed(sourcev1.VerificationErrorReason, err)
	}
	var signer string
	switch v.GetProvider() {
	case sourcev1.OCIVerifyNotation:
		trust, rerr := oci.ReadNotationTrust(source, data)
		if rerr != nil {
			return "", plumbreconcile.Failed(sourcev1.VerificationErrorReason, rerr)
		}
		signer, err = c.VerifyNotation(digest, trust)
	default:
		keys, rerr := oci.ReadCosignKeys(source, data)
		if rerr != nil {
			return "", plumbreconcile.Failed(sourcev1.VerificationErrorReason, rerr)
		}
		var key string
		key, err = c.VerifyCosign(digest, keys)
		signer = "key " + key + " of spec.verify.secretRef"
	}
	switch {
	case oci.KindOf(err) == oci.Unverified:
		return "", plumbreconcile.Failed(sourcev1.InvalidArtifactSignatureReason,
			fmt.Errorf("%s refused, no artifact made of it: %w", what, err))
	case err != nil:
		return "", plumbreconcile.Failed(sourcev1.VerificationErrorReason, errors.New(message.StripUserInfo(err.Error())))
	}
	return signer, nil
}
