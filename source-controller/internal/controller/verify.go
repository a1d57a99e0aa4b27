package controller

import (
	"context"
	"errors"
	"fmt"

	"github.com/fluxcd/pkg/runtime/conditions"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
	plumbreconcile "plumb.dev/pkg/reconcile"
)

// What the verify steps of GitRepository and OCIRepository share
// (docs/design/source-verification.md): the Secret of spec.verify, the
// SourceVerified condition, and when a stored artifact counts as
// verified.

// verificationSecret reads the data of spec.verify's Secret name in
// namespace, and names it for messages ("spec.verify.secretRef: Secret
// ns/name").
func verificationSecret(ctx context.Context, c client.Reader, namespace, name string) (map[string][]byte, string, error) {
	source := "spec.verify.secretRef: Secret " + namespace + "/" + name
	var secret corev1.Secret
	if err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, &secret); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, source, fmt.Errorf("%s not found", source)
		}
		return nil, source, fmt.Errorf("reading %s: %w", source, err)
	}
	return secret.Data, source, nil
}

// markVerified records a verify step's outcome in SourceVerified: True
// with msg, or False with the reason of err (a *plumbreconcile.Error),
// which it returns.
func markVerified(obj conditions.Setter, msg string, err error) error {
	if err != nil {
		var e *plumbreconcile.Error
		if errors.As(err, &e) {
			conditions.MarkFalse(obj, sourcev1.SourceVerifiedCondition, e.Reason, "%s", err.Error())
		}
		return err
	}
	conditions.MarkTrue(obj, sourcev1.SourceVerifiedCondition, meta.SucceededReason, "%s", msg)
	return nil
}

// verifiedForGeneration reports whether an artifact of this generation
// needs no new verification: verify (the object has spec.verify) is
// false, or SourceVerified is True for this generation. The source step
// fetches again otherwise, so that an artifact made before spec.verify,
// or kept through a refusal, is never taken as verified. GitRepository
// and OCIRepository share it.
func verifiedForGeneration(obj conditions.Getter, verify bool) bool {
	if !verify {
		return true
	}
	c := conditions.Get(obj, sourcev1.SourceVerifiedCondition)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == obj.GetGeneration()
}
