// Package cosigntest signs artifacts in a registry as `cosign sign --key`
// does, with ECDSA P-256 keys made in the test, for the tests of
// OCIRepository's spec.verify (internal/oci and the reconciler's): a
// simple-signing payload naming the manifest digest, signed with SHA-256,
// as one more layer of the manifest tagged sha256-<hex>.sig, the
// signature in the layer's annotation. Nothing here is used outside tests.
package cosigntest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature/payload"
)

// cosign's names, written here independently of internal/oci so that a
// mistake there is not mirrored by the tests.
const (
	payloadMediaType    = "application/vnd.dev.cosign.simplesigning.v1+json"
	signatureAnnotation = "dev.cosignproject.cosign/signature"
)

// Key is a key pair; PublicPEM is what `cosign generate-key-pair` writes
// to cosign.pub.
type Key struct {
	private   *ecdsa.PrivateKey
	PublicPEM []byte
}

// NewKey makes a key pair.
func NewKey(t testing.TB) *Key {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := cryptoutils.MarshalPublicKeyToPEM(priv.Public())
	if err != nil {
		t.Fatal(err)
	}
	return &Key{private: priv, PublicPEM: pub}
}

// Payload is the simple-signing payload cosign signs for the manifest
// digest (sha256:<hex>) of the repository repo (host/path).
func Payload(t testing.TB, repo, digest string) []byte {
	t.Helper()
	d, err := name.NewDigest(repo+"@"+digest, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	b, err := payload.Cosign{Image: d}.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Sign signs digest in repo (host/path or oci://host/path) with k, as
// cosign sign --key does.
func (k *Key) Sign(t testing.TB, repo, digest string) {
	t.Helper()
	repo = strings.TrimPrefix(repo, "oci://")
	k.SignPayload(t, repo, digest, Payload(t, repo, digest))
}

// SignPayload appends a signature by k of body to the signatures of
// digest in repo (host/path): for payloads cosign would not write.
func (k *Key) SignPayload(t testing.TB, repo, digest string, body []byte) {
	t.Helper()
	sum := sha256.Sum256(body)
	sig, err := ecdsa.SignASN1(rand.Reader, k.private, sum[:])
	if err != nil {
		t.Fatal(err)
	}
	AppendLayer(t, repo, digest, static.NewLayer(body, payloadMediaType), map[string]string{
		signatureAnnotation: base64.StdEncoding.EncodeToString(sig),
	})
}

// AppendLayer adds a layer with annotations to the manifest tagged with
// the signature tag of digest in repo (host/path), creating it if needed,
// as cosign does for each new signature.
func AppendLayer(t testing.TB, repo, digest string, layer v1.Layer, annotations map[string]string) {
	t.Helper()
	tag, err := name.NewTag(strings.TrimPrefix(repo, "oci://")+":"+strings.Replace(digest, ":", "-", 1)+".sig", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	if existing, err := remote.Image(tag); err == nil {
		img = existing
	}
	if img, err = mutate.Append(img, mutate.Addendum{Layer: layer, Annotations: annotations}); err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(tag, img); err != nil {
		t.Fatal(err)
	}
}
