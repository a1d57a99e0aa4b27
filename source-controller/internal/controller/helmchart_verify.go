package controller

import (
	"context"
	"fmt"
	"strings"

	"github.com/fluxcd/pkg/runtime/conditions"
	"github.com/google/go-containerregistry/pkg/authn"

	"plumb.dev/api/meta"
	sourcev1 "plumb.dev/api/source/v1"
	plumbreconcile "plumb.dev/pkg/reconcile"
	"plumb.dev/source-controller/internal/oci"
)

// A HelmChart's spec.verify: the signatures of the chart's OCI manifest,
// checked as an OCIRepository's are (verifySignature), before anything
// of the chart is pulled; the chart is then pulled by the digest that was
// checked, not by its tag, which may have moved since.

// verifyUnsupported refuses spec.verify for a source that is not an OCI
// HelmRepository (Flux's HelmChart skips it there without a word; here a
// chart the user asked to verify is never served unverified). Stalled
// until the spec changes; nil when there is nothing to refuse.
func verifyUnsupported(obj *sourcev1.HelmChart, source string) error {
	if obj.Spec.Verify == nil {
		return nil
	}
	err := fmt.Errorf("spec.verify checks the signatures of charts from an OCI HelmRepository; %s has none to check", source)
	conditions.MarkTrue(obj, sourcev1.FetchFailedCondition, meta.InvalidSpecReason, "%s", err.Error())
	return plumbreconcile.Stalled(meta.InvalidSpecReason, err)
}

// chartVerifyError is a refused or failed verification: SourceVerified
// is False with its reason already, and FetchFailed is left alone (the
// chart was not fetched, nothing failed to fetch).
type chartVerifyError struct{ err error }

func (e *chartVerifyError) Error() string { return e.err.Error() }
func (e *chartVerifyError) Unwrap() error { return e.err }

// verifyChart resolves the tag of version in the OCI repository ref
// (host/path/chart) to its manifest digest and checks the digest's
// signatures with spec.verify, reaching the registry with the
// HelmRepository's credentials, certificates and address policy within
// its spec.timeout. It returns the verified digest, and sets
// SourceVerified: True naming the version, digest and signer; False with
// VerificationError or InvalidArtifactSignature (retried with backoff:
// the Secret may change, a signature may be pushed after the chart).
func (r *HelmChartReconciler) verifyChart(ctx context.Context, obj *sourcev1.HelmChart, repo *sourcev1.HelmRepository, ref, version string) (string, error) {
	v := obj.Spec.Verify
	fail := func(err error) (string, error) {
		return "", &chartVerifyError{markVerified(obj, "", err)}
	}
	creds, err := helmCredentials(ctx, r.Client, repo)
	if err != nil {
		return fail(plumbreconcile.Failed(sourcev1.VerificationErrorReason, err))
	}
	o := oci.Options{Insecure: repo.Spec.Insecure, TLS: creds.TLS, Addresses: r.Addresses}
	if creds.Username != "" {
		o.Auth = authn.FromConfig(authn.AuthConfig{Username: creds.Username, Password: creds.Password})
	}
	ctx, cancel := context.WithTimeout(ctx, repo.GetTimeout().Duration)
	defer cancel()
	c, err := oci.NewClient(ctx, "oci://"+ref, o)
	if err != nil {
		return fail(plumbreconcile.Failed(sourcev1.VerificationErrorReason, err))
	}
	// OCI tags cannot hold "+": Helm writes it as "_".
	digest, _, err := c.Resolve(oci.Ref{Tag: strings.ReplaceAll(version, "+", "_")})
	if err != nil {
		return fail(plumbreconcile.Failed(sourcev1.VerificationErrorReason, fmt.Errorf("resolving version %s of %s: %w", version, ref, err)))
	}
	what := fmt.Sprintf("version %s (%s)", version, digest)
	signer, err := verifySignature(ctx, r.Client, obj.Namespace, v, c, digest, what)
	if err != nil {
		return fail(err)
	}
	_ = markVerified(obj, fmt.Sprintf("verified %s signature of %s with %s", v.GetProvider(), what, signer), nil)
	return digest.String(), nil
}
