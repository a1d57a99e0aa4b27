package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/fluxcd/pkg/runtime/conditions"

	sourcev1 "plumb.dev/api/source/v1"
	plumbreconcile "plumb.dev/pkg/reconcile"
	"plumb.dev/source-controller/internal/git"
)

// reconcileVerify checks, with spec.verify, the OpenPGP or SSH signatures of the
// revision the source step checked out, before the artifact step packs it:
// the commit (mode HEAD), the annotated tag spec.ref names (Tag), or both
// (TagAndHEAD), against the public keys of spec.verify.secretRef. Sets
// SourceVerified: True naming the keys' fingerprints; False with
// VerificationError (the Secret is missing, unreadable or holds no usable
// key), InvalidGitObject (an unsigned or lightweight tag), InvalidTagSignature
// or InvalidCommitSignature (unsigned, or signed by no trusted key), all
// retried with backoff, as the Secret or the remote may change; or
// InvalidVerificationMode (a tag mode with a spec.ref that is not a tag),
// stalled until the spec changes. A refused revision gets no artifact: the
// previous one stays in status and storage. Without spec.verify the
// condition is removed; when nothing was fetched (the artifact already has
// the revision and was verified for this generation) nothing is checked.
func (r *GitRepositoryReconciler) reconcileVerify(ctx context.Context, obj *sourcev1.GitRepository, st *state) error {
	v := obj.Spec.Verification
	if v == nil {
		conditions.Delete(obj, sourcev1.SourceVerifiedCondition)
		return nil
	}
	if st.upToDate {
		return nil
	}
	msg, err := r.verify(ctx, obj, v, st.target, st.checkout)
	return markVerified(obj, msg, err)
}

// verify checks what v asks for on target, checked out at dir, and
// returns the success message; its errors are *plumbreconcile.Error.
func (r *GitRepositoryReconciler) verify(ctx context.Context, obj *sourcev1.GitRepository, v *sourcev1.GitRepositoryVerification, target git.Target, dir string) (string, error) {
	tagged := strings.HasPrefix(target.RefName, "refs/tags/")
	if v.VerifyTag() && !tagged {
		return "", plumbreconcile.Stalled(sourcev1.InvalidVerificationModeReason, fmt.Errorf(
			"spec.verify.mode %s verifies the tag that spec.ref names, but spec.ref names no tag (set ref.tag, ref.semver or a refs/tags/ ref.name, or use mode HEAD)", v.Mode))
	}
	keys, err := r.keyRing(ctx, obj.Namespace, v.SecretRef.Name)
	if err != nil {
		return "", plumbreconcile.Failed(sourcev1.VerificationErrorReason, err)
	}
	var verified []string
	if v.VerifyTag() {
		fp, err := git.VerifyTag(dir, target.RefName, target.Commit, keys)
		switch {
		case errors.Is(err, git.ErrNotSigned):
			return "", plumbreconcile.Failed(sourcev1.InvalidGitObjectReason, refused(target, err))
		case err != nil:
			return "", plumbreconcile.Failed(sourcev1.InvalidTagSignatureReason, refused(target, err))
		}
		verified = append(verified, fmt.Sprintf("tag %s with key %s", strings.TrimPrefix(target.RefName, "refs/tags/"), fp))
	}
	if v.VerifyHEAD() {
		fp, err := git.VerifyCommit(dir, target.Commit, keys)
		if err != nil {
			return "", plumbreconcile.Failed(sourcev1.InvalidCommitSignatureReason, refused(target, err))
		}
		verified = append(verified, fmt.Sprintf("commit %s with key %s", target.Commit, fp))
	}
	return "verified signature of " + strings.Join(verified, " and of "), nil
}

// refused says that the revision of target gets no artifact, and why.
func refused(target git.Target, err error) error {
	return fmt.Errorf("revision %s refused, no artifact made of it: %w", target.Revision(), err)
}

// keyRing reads the public keys of the Secret name in namespace.
func (r *GitRepositoryReconciler) keyRing(ctx context.Context, namespace, name string) (*git.KeyRing, error) {
	data, source, err := verificationSecret(ctx, r.Client, namespace, name)
	if err != nil {
		return nil, err
	}
	return git.ReadKeyRing(source, data)
}
