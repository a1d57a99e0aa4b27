package oci

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/notaryproject/notation-core-go/revocation"
	"github.com/notaryproject/notation-core-go/revocation/crl"
	"github.com/notaryproject/notation-core-go/revocation/purpose"
	"github.com/notaryproject/notation-go"
	"github.com/notaryproject/notation-go/registry"
	"github.com/notaryproject/notation-go/verifier"
	"github.com/notaryproject/notation-go/verifier/trustpolicy"
	"github.com/notaryproject/notation-go/verifier/truststore"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"

	"plumb.dev/pkg/netguard"
)

// Bounds on the Secret of a notation spec.verify, which a tenant writes.
const (
	// TrustPolicyKey is the Secret data key of the trust policy, as in
	// Flux and the notation CLI's file name.
	TrustPolicyKey = "trustpolicy.json"
	// MaxTrustPolicyBytes bounds the trust policy.
	MaxTrustPolicyBytes = 64 << 10
	// MaxCertificateBytes bounds the bytes of the certificate values.
	MaxCertificateBytes = 256 << 10
	// MaxCertificates bounds the certificates of all values together.
	MaxCertificates = 100
)

// certificateSuffixes end the Secret data keys that hold certificates.
var certificateSuffixes = []string{".crt", ".pem"}

// revocationClient is the HTTP client of notation's OCSP and CRL fetches:
// notation's own timeouts, no proxy (the policy judges the address
// dialed), and the registry's address policy. The OCSP and CRL addresses
// come from the certificates of the tenant's trust store, so they are the
// tenant's input as much as the registry's address is.
func revocationClient(timeout time.Duration, addresses netguard.Policy) *http.Client {
	return &http.Client{Timeout: timeout, Transport: &http.Transport{
		DialContext:         addresses.Dialer(timeout).DialContext,
		TLSHandshakeTimeout: timeout,
		// A client per verification: no connection outlives its fetch, so
		// a server that never closes holds nothing.
		DisableKeepAlives: true,
	}}
}

// revocationOptions are notation's code-signing and timestamping
// revocation validators with revocationClient.
func revocationOptions(addresses netguard.Policy) (verifier.VerifierOptions, error) {
	crlFetcher, err := crl.NewHTTPFetcher(revocationClient(5*time.Second, addresses))
	if err != nil {
		return verifier.VerifierOptions{}, err
	}
	validator := func(p purpose.Purpose) (revocation.Validator, error) {
		return revocation.NewWithOptions(revocation.Options{
			OCSPHTTPClient: revocationClient(2*time.Second, addresses), CRLFetcher: crlFetcher, CertChainPurpose: p,
		})
	}
	signing, err := validator(purpose.CodeSigning)
	if err != nil {
		return verifier.VerifierOptions{}, err
	}
	timestamping, err := validator(purpose.Timestamping)
	if err != nil {
		return verifier.VerifierOptions{}, err
	}
	return verifier.VerifierOptions{RevocationCodeSigningValidator: signing, RevocationTimestampingValidator: timestamping}, nil
}

// NotationTrust is the trust policy and the certificates an OCIRepository
// verifies notation signatures with.
type NotationTrust struct {
	policy *trustpolicy.Document
	certs  []*x509.Certificate
	// source names the Secret, for messages.
	source string
}

// ReadNotationTrust parses the trust policy (trustpolicy.json, the
// notation CLI's OCI trust policy document, validated as notation does)
// and the PEM certificates (values whose keys end in .crt or .pem) of
// data, a Secret's data; source names the Secret in messages. Every
// certificate is in every trust store the policy names (as in Flux: the
// Secret is the trust store). It fails without a policy or a certificate,
// on a value that does not parse, and past the bounds.
func ReadNotationTrust(source string, data map[string][]byte) (*NotationTrust, error) {
	raw, ok := data[TrustPolicyKey]
	switch {
	case !ok:
		return nil, fmt.Errorf("%s has no %s", source, TrustPolicyKey)
	case len(raw) > MaxTrustPolicyBytes:
		return nil, fmt.Errorf("%s: %s is %d bytes, more than the limit of %d", source, TrustPolicyKey, len(raw), MaxTrustPolicyBytes)
	}
	t := &NotationTrust{policy: &trustpolicy.Document{}, source: source}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(t.policy); err != nil {
		return nil, fmt.Errorf("%s: %s is not a trust policy document: %v", source, TrustPolicyKey, err)
	}
	if err := t.policy.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %s: %v", source, TrustPolicyKey, err)
	}
	var names []string
	size := 0
	for name, v := range data {
		for _, suffix := range certificateSuffixes {
			if strings.HasSuffix(name, suffix) {
				names = append(names, name)
				size += len(v)
				break
			}
		}
	}
	if size > MaxCertificateBytes {
		return nil, fmt.Errorf("%s holds %d bytes of certificates, more than the limit of %d", source, size, MaxCertificateBytes)
	}
	sort.Strings(names)
	for _, name := range names {
		rest := data[name]
		n := 0
		for {
			var block *pem.Block
			if block, rest = pem.Decode(rest); block == nil {
				break
			}
			if block.Type != "CERTIFICATE" {
				return nil, fmt.Errorf("%s: the value of %q holds a PEM %s, not a CERTIFICATE", source, name, block.Type)
			}
			cert, err := x509.ParseCertificate(block.Bytes)
			if err != nil {
				return nil, fmt.Errorf("%s: the value of %q holds a certificate that does not parse: %v", source, name, err)
			}
			if t.certs = append(t.certs, cert); len(t.certs) > MaxCertificates {
				return nil, fmt.Errorf("%s holds more than %d certificates", source, MaxCertificates)
			}
			n++
		}
		if n == 0 {
			return nil, fmt.Errorf("%s: the value of %q holds no PEM certificate", source, name)
		}
	}
	if len(t.certs) == 0 {
		return nil, fmt.Errorf("%s holds no certificate (a data key ending in .crt or .pem)", source)
	}
	return t, nil
}

// GetCertificates is notation's X509TrustStore: every certificate, for
// every store.
func (t *NotationTrust) GetCertificates(context.Context, truststore.Type, string) ([]*x509.Certificate, error) {
	return t.certs, nil
}

// VerifyNotation checks, with notation-go, that the manifest digest has a
// notation signature (an OCI referrer of the digest, read through the
// Referrers API or its tag fallback) that trust's policy accepts for this
// repository, and returns what accepted it: the trust policy statement's
// name and the signing certificate's subject. At most MaxSignatures
// signatures are tried. A statement that does not enforce authenticity
// (audit, skip) is refused: it would pass anyone's signature. Its failures
// that say the artifact is not signed as required have the Kind
// Unverified (a signature that needs a notation plugin among them:
// plugins are not run); a registry failure or a policy with no statement
// for this repository do not.
func (c *Client) VerifyNotation(digest v1.Hash, trust *NotationTrust) (string, error) {
	target, err := remote.NewRepository(c.repo.Name())
	if err != nil {
		return "", errorf(InvalidSpec, "%s: %v", c.repo, err)
	}
	// Plain HTTP as for the other requests (Client.plainHTTP): never with
	// credentials unless spec.insecure says so.
	target.PlainHTTP = c.plainHTTP
	cfg, err := c.auth.Authorization()
	if err != nil {
		return "", err
	}
	target.Client = &auth.Client{Client: &http.Client{Transport: c.transport}, Credential: auth.StaticCredential(c.repo.RegistryStr(), auth.Credential{
		Username: cfg.Username, Password: cfg.Password, RefreshToken: cfg.IdentityToken, AccessToken: cfg.RegistryToken,
	})}
	vopts, err := revocationOptions(c.addresses)
	if err != nil {
		return "", err
	}
	v, err := verifier.NewWithOptions(trust.policy, trust, nil, vopts)
	if err != nil {
		return "", fmt.Errorf("%s: %s: %v", trust.source, TrustPolicyKey, err)
	}
	repo := &countingRepository{Repository: registry.NewRepository(target)}
	ref := c.repo.Name() + "@" + digest.String()
	_, outcomes, err := notation.Verify(c.ctx, v, repo, notation.VerifyOptions{ArtifactReference: ref, MaxSignatureAttempts: MaxSignatures})
	var (
		retrieval notation.SignatureRetrievalFailedError
		failed    notation.VerificationFailedError
		noPolicy  notation.NoApplicableTrustPolicyError
	)
	switch {
	case err == nil:
	case errors.As(err, &retrieval) && repo.signatures == 0:
		return "", errorf(Unverified, "the artifact %s is not signed: %s has no notation signature of it", digest, c.repo)
	case errors.As(err, &noPolicy):
		return "", fmt.Errorf("%s: no statement of %s applies to %s: %v", trust.source, TrustPolicyKey, c.repo, err)
	case errors.As(err, &failed):
		return "", errorf(Unverified, "the artifact %s has no notation signature that %s of %s accepts: %v", digest, TrustPolicyKey, trust.source, err)
	default:
		return "", fmt.Errorf("reading the notation signatures of %s: %w", digest, err)
	}
	if len(outcomes) != 1 || outcomes[0].VerificationLevel == nil {
		return "", errorf(Unverified, "the artifact %s: notation returned no verification outcome", digest)
	}
	o := outcomes[0]
	// Levels audit and skip (or an override) let notation succeed on a
	// signature by anyone, or on none: that is no verification.
	if o.VerificationLevel.Enforcement[trustpolicy.TypeAuthenticity] != trustpolicy.ActionEnforce || o.EnvelopeContent == nil {
		return "", errorf(Unverified, "the artifact %s is not verified: the statement of %s for %s does not enforce authenticity (level %s), so any signature would pass",
			digest, TrustPolicyKey, c.repo, o.VerificationLevel.Name)
	}
	subject := "unknown"
	if chain := o.EnvelopeContent.SignerInfo.CertificateChain; len(chain) > 0 {
		subject = chain[0].Subject.String()
	}
	return "certificate " + subject, nil
}

// countingRepository counts the signatures notation was offered, to tell
// "none" from a registry failure: notation reports both as a retrieval
// failure.
type countingRepository struct {
	registry.Repository
	signatures int
}

func (r *countingRepository) ListSignatures(ctx context.Context, desc ocispec.Descriptor, fn func([]ocispec.Descriptor) error) error {
	return r.Repository.ListSignatures(ctx, desc, func(page []ocispec.Descriptor) error {
		r.signatures += len(page)
		return fn(page)
	})
}
