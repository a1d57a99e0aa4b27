package oci

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"plumb.dev/pkg/netguard"
	"plumb.dev/source-controller/internal/oci/notationtest"
)

// A manifest is verified only by a notation signature whose certificate
// chains to a certificate of the Secret and whose identity the trust
// policy trusts; an unsigned artifact and another CA's signature are
// refused as Unverified.
func TestVerifyNotationFollowsTheTrustPolicy(t *testing.T) {
	ca, otherCA := notationtest.NewCA(t, "release-ca"), notationtest.NewCA(t, "stranger-ca")
	release, intern, stranger := ca.NewSigner(t, "release"), ca.NewSigner(t, "intern"), otherCA.NewSigner(t, "release")
	host := newTestRegistry(t)
	cases := []struct {
		name       string
		sign       func(t *testing.T, repo, digest string)
		level      string
		identities []string
		want, err  string
	}{
		{"signed, any identity", func(t *testing.T, repo, digest string) { release.Sign(t, repo, digest) },
			"strict", []string{"*"}, "certificate CN=release,O=Plumb,L=Seattle,ST=WA,C=US", ""},
		{"signed, level permissive", func(t *testing.T, repo, digest string) { release.Sign(t, repo, digest) },
			"permissive", []string{"*"}, "certificate CN=release", ""},
		{"signed by the trusted identity", func(t *testing.T, repo, digest string) { release.Sign(t, repo, digest) },
			"strict", []string{notationtest.Subject("release")}, "certificate CN=release", ""},
		{"signed by an identity the policy does not trust", func(t *testing.T, repo, digest string) { intern.Sign(t, repo, digest) },
			"strict", []string{notationtest.Subject("release")}, "", "has no notation signature that trustpolicy.json of Secret ns/trust accepts"},
		{"signed under another CA", func(t *testing.T, repo, digest string) { stranger.Sign(t, repo, digest) },
			"strict", []string{"*"}, "", "has no notation signature that trustpolicy.json of Secret ns/trust accepts"},
		{"signed under another CA, level audit", func(t *testing.T, repo, digest string) { stranger.Sign(t, repo, digest) },
			"audit", []string{"*"}, "", "does not enforce authenticity (level audit)"},
		{"unsigned, level skip", func(*testing.T, string, string) {}, "skip", []string{"*"}, "", "does not enforce authenticity (level skip)"},
		{"unsigned", func(*testing.T, string, string) {}, "strict", []string{"*"}, "", "is not signed: "},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			repo := fmt.Sprintf("%s/notation/case%d", host, i)
			digest := pushArtifact(t, repo, c.name)
			c.sign(t, repo, digest.String())
			got, err := verifyNotation(t, repo, digest, notationtest.TrustPolicy(t, c.level, []string{repo}, c.identities...), ca)
			if c.err != "" {
				if err == nil || KindOf(err) != Unverified || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("want an Unverified error with %q, got %v", c.err, err)
				}
				return
			}
			if err != nil || !strings.HasPrefix(got, c.want) {
				t.Fatalf("want %q, got %q, %v", c.want, got, err)
			}
		})
	}
}

// A trust policy without a statement for the repository is a problem of
// the Secret, not a verdict on the artifact.
func TestVerifyNotationPolicyForAnotherRepositoryIsNotAVerdict(t *testing.T) {
	ca := notationtest.NewCA(t, "release-ca")
	host := newTestRegistry(t)
	repo := host + "/notation/elsewhere"
	digest := pushArtifact(t, repo, "elsewhere")
	ca.NewSigner(t, "release").Sign(t, repo, digest.String())
	_, err := verifyNotation(t, repo, digest, notationtest.TrustPolicy(t, "strict", []string{host + "/other"}, "*"), ca)
	if err == nil || KindOf(err) == Unverified || !strings.Contains(err.Error(), "no statement of trustpolicy.json applies") {
		t.Fatalf("want a policy error that is not Unverified, got %v", err)
	}
}

// The Secret is tenant input: the policy must be a valid trust policy
// document, the certificates must parse, and both are bounded.
func TestReadNotationTrustRefusesUnusableSecrets(t *testing.T) {
	ca := notationtest.NewCA(t, "release-ca")
	policy := notationtest.TrustPolicy(t, "strict", []string{"*"}, "*")
	cases := []struct {
		name string
		data map[string][]byte
		err  string
	}{
		{"policy and a CA", map[string][]byte{TrustPolicyKey: policy, "ca.crt": ca.PEM, "README": []byte("ignored")}, ""},
		{"no policy", map[string][]byte{"ca.crt": ca.PEM}, "has no trustpolicy.json"},
		{"policy not JSON", map[string][]byte{TrustPolicyKey: []byte("{"), "ca.crt": ca.PEM}, "is not a trust policy document"},
		{"policy with an unknown field", map[string][]byte{TrustPolicyKey: []byte(`{"version":"1.0","trustPolicies":[],"extra":1}`), "ca.crt": ca.PEM}, "is not a trust policy document"},
		{"policy invalid", map[string][]byte{TrustPolicyKey: []byte(`{"version":"1.0","trustPolicies":[]}`), "ca.crt": ca.PEM}, "trustpolicy.json: "},
		{"no certificate", map[string][]byte{TrustPolicyKey: policy}, "holds no certificate (a data key ending in .crt or .pem)"},
		{"not PEM", map[string][]byte{TrustPolicyKey: policy, "ca.pem": []byte("not a certificate")}, `the value of "ca.pem" holds no PEM certificate`},
		{"a key, not a certificate", map[string][]byte{TrustPolicyKey: policy, "ca.pem": []byte("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n")}, "holds a PEM PUBLIC KEY, not a CERTIFICATE"},
		{"policy too large", map[string][]byte{TrustPolicyKey: make([]byte, MaxTrustPolicyBytes+1), "ca.crt": ca.PEM}, fmt.Sprintf("more than the limit of %d", MaxTrustPolicyBytes)},
		{"certificates too large", map[string][]byte{TrustPolicyKey: policy, "ca.crt": make([]byte, MaxCertificateBytes+1)}, fmt.Sprintf("more than the limit of %d", MaxCertificateBytes)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			trust, err := ReadNotationTrust("Secret ns/trust", c.data)
			if c.err == "" {
				if err != nil || len(trust.certs) != 1 {
					t.Fatalf("want one certificate, got %v, %v", trust, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), "Secret ns/trust") {
				t.Fatalf("want an error naming the Secret with %q, got %v", c.err, err)
			}
		})
	}
}

// verifyNotation verifies digest in repo (host/path) with a Secret of
// policy and the certificate of ca.
func verifyNotation(t *testing.T, repo string, digest v1.Hash, policy []byte, ca *notationtest.CA) (string, error) {
	t.Helper()
	trust, err := ReadNotationTrust("Secret ns/trust", map[string][]byte{TrustPolicyKey: policy, "ca.crt": ca.PEM})
	if err != nil {
		t.Fatal(err)
	}
	client, err := NewClient(context.Background(), "oci://"+repo, Options{Insecure: true, Addresses: loopback})
	if err != nil {
		t.Fatal(err)
	}
	return client.VerifyNotation(digest, trust)
}

// notation's OCSP and CRL fetches go to addresses in the tenant's
// certificates: they get the registry's address policy, under which
// metadata and link-local addresses are refused before any connection,
// and loopback servers only when allowed.
func TestRevocationFetchesKeepOffMetadataAddresses(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	defer srv.Close()
	var refused *netguard.RefusedAddressError
	if _, err := revocationClient(2*time.Second, netguard.Policy{}).Get(srv.URL); !errors.As(err, &refused) {
		t.Errorf("a loopback revocation server under a policy that refuses loopback: got %v", err)
	}
	c := revocationClient(2*time.Second, loopback)
	resp, err := c.Get(srv.URL)
	if err != nil {
		t.Fatalf("a loopback revocation server is allowed: %v", err)
	}
	resp.Body.Close()
	for _, target := range []string{"http://169.254.169.254/latest/meta-data/", "http://[fe80::1]/crl", "http://100.100.100.200/"} {
		_, err := c.Get(target)
		if !errors.As(err, &refused) {
			t.Errorf("GET %s: got %v, want the address refused", target, err)
		}
	}
	if _, err := revocationOptions(loopback); err != nil {
		t.Fatal(err)
	}
}
