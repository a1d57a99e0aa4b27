// Package notationtest signs artifacts in a registry as `notation sign`
// does, with a certificate authority and signing certificates made in the
// test (ECDSA P-256, the certificate profile of the Notary Project
// specification), for the tests of OCIRepository's spec.verify with
// provider notation: a JWS envelope pushed by notation-go as an OCI
// referrer of the signed manifest. Nothing here is used outside tests.
package notationtest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/notaryproject/notation-go"
	"github.com/notaryproject/notation-go/registry"
	"github.com/notaryproject/notation-go/signer"
	"oras.land/oras-go/v2/registry/remote"
)

// CA is a root certificate authority; PEM is its certificate, what a
// Secret's ca.crt holds.
type CA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	PEM  []byte
}

// Signer is a signing certificate issued by a CA, with its key.
type Signer struct {
	key   *ecdsa.PrivateKey
	chain []*x509.Certificate
}

var serial int64 = 1

func newCert(t testing.TB, tmpl *x509.Certificate, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial++
	tmpl.SerialNumber = big.NewInt(serial)
	tmpl.NotBefore = time.Now().Add(-time.Hour)
	tmpl.NotAfter = time.Now().Add(24 * time.Hour)
	tmpl.BasicConstraintsValid = true
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, key.Public(), parentKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}

// Subject is the distinguished name of the certificates made here with
// common name cn, as a trust policy's trustedIdentities writes it.
func Subject(cn string) string {
	return "x509.subject: C=US, ST=WA, L=Seattle, O=Plumb, CN=" + cn
}

func name(cn string) pkix.Name {
	return pkix.Name{Country: []string{"US"}, Province: []string{"WA"}, Locality: []string{"Seattle"}, Organization: []string{"Plumb"}, CommonName: cn}
}

// NewCA makes a self-signed root CA named cn.
func NewCA(t testing.TB, cn string) *CA {
	t.Helper()
	cert, key := newCert(t, &x509.Certificate{
		Subject: name(cn), IsCA: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}, nil, nil)
	return &CA{cert: cert, key: key, PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})}
}

// NewSigner issues a code-signing certificate named cn.
func (ca *CA) NewSigner(t testing.TB, cn string) *Signer {
	t.Helper()
	cert, key := newCert(t, &x509.Certificate{
		Subject: name(cn), KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning},
	}, ca.cert, ca.key)
	return &Signer{key: key, chain: []*x509.Certificate{cert, ca.cert}}
}

// Sign signs digest (sha256:<hex>) in repo (host/path or
// oci://host/path, plain HTTP) with a JWS envelope, as notation sign does.
func (s *Signer) Sign(t testing.TB, repo, digest string) {
	t.Helper()
	repo = strings.TrimPrefix(repo, "oci://")
	target, err := remote.NewRepository(repo)
	if err != nil {
		t.Fatal(err)
	}
	target.PlainHTTP = true
	sig, err := signer.NewGenericSigner(s.key, s.chain)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := notation.Sign(context.Background(), sig, registry.NewRepository(target), notation.SignOptions{
		ArtifactReference: repo + "@" + digest,
		SignerSignOptions: notation.SignerSignOptions{SignatureMediaType: "application/jose+json"},
	}); err != nil {
		t.Fatal(err)
	}
}

// TrustPolicy is a trustpolicy.json with one statement named "release"
// of the level (strict, permissive, audit, skip) for the registry scopes
// (host/path, or "*"), trusting the store ca:release and the identities
// ("*" for any; none for skip).
func TrustPolicy(t testing.TB, level string, scopes []string, identities ...string) []byte {
	t.Helper()
	statement := map[string]any{
		"name":                  "release",
		"registryScopes":        scopes,
		"signatureVerification": map[string]any{"level": level},
	}
	// notation refuses stores and identities in a statement that skips.
	if level != "skip" {
		statement["trustStores"] = []string{"ca:release"}
		statement["trustedIdentities"] = identities
	}
	b, err := json.Marshal(map[string]any{"version": "1.0", "trustPolicies": []any{statement}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}
