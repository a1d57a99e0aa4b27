package drift

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "plumb.dev/api/kustomize/v1"
	"plumb.dev/pkg/diff"
)

// SecretRedactor returns what hides, in a drift report (sync-controller's
// status.drift and DriftDetected/DriftCorrected events, `plumb diff`), the
// values that spec.postBuild.substituteFrom put into the rendered manifests
// from Secrets: every value of those Secrets as r reads them now. It is nil
// when the Kustomization substitutes from no Secret.
//
// A Kustomization with spec.decryption hides every value: SOPS plaintext
// can land in any field of any object (a ConfigMap generated from an
// encrypted env file, an encrypted patch of a Deployment), and only
// render-controller, which holds the keys, knows it (docs/design/sops.md).
//
// A Secret that does not exist adds nothing: an optional Secret absent at
// render time put nothing in. When a Secret cannot be read, the redactor
// hides every value (diff.RedactAll) and the error says which Secret.
//
// The values are those of the Secrets now, while the manifests hold them
// as they were at render time. A Secret written after the rendered artifact
// (its newest managedFields time is later than status.renderedArtifact's
// lastUpdateTime) may have held other values then, which nothing here
// knows: the redactor hides every value until the artifact is newer than
// the Secret. (A render whose output did not change keeps the artifact's
// time, so a change to a key the manifests do not use keeps every value
// hidden until the artifact next changes: safe, if coarse.) Both times have
// one-second resolution; a Secret changed within the second its artifact
// was made counts as older.
func SecretRedactor(ctx context.Context, r client.Reader, ks *kustomizev1.Kustomization) (*diff.Redactor, error) {
	if ks.Spec.Decryption != nil {
		return diff.RedactAll(), nil
	}
	pb := ks.Spec.PostBuild
	if pb == nil {
		return nil, nil
	}
	var values []string
	secrets := 0
	for _, ref := range pb.SubstituteFrom {
		if ref.Kind != "Secret" {
			continue
		}
		secrets++
		secret := &corev1.Secret{}
		key := types.NamespacedName{Namespace: ks.Namespace, Name: ref.Name}
		err := r.Get(ctx, key, secret)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return diff.RedactAll(), fmt.Errorf("reading Secret %s (postBuild.substituteFrom) to redact its values: %w", key, err)
		}
		if changedAfter(secret, ks) {
			return diff.RedactAll(), nil
		}
		for _, v := range secret.Data {
			values = append(values, string(v))
		}
	}
	if secrets == 0 {
		return nil, nil
	}
	return diff.NewRedactor(values), nil
}

// changedAfter reports whether secret was written after ks's rendered
// artifact was made.
func changedAfter(secret *corev1.Secret, ks *kustomizev1.Kustomization) bool {
	a := ks.Status.RenderedArtifact
	if a == nil || a.LastUpdateTime.IsZero() {
		return false
	}
	last := secret.CreationTimestamp.Time
	for _, m := range secret.ManagedFields {
		if m.Time != nil && m.Time.After(last) {
			last = m.Time.Time
		}
	}
	return last.After(a.LastUpdateTime.Time)
}
