package oci

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"plumb.dev/source-controller/internal/oci/cosigntest"
)

// A manifest is verified only by a signature that a trusted key made over
// a payload naming that manifest's digest; every other case is refused
// as Unverified with a message saying why.
func TestVerifyCosignTrustsOnlyASignatureOfTheDigestByAKeyOfTheSecret(t *testing.T) {
	trusted, other := cosigntest.NewKey(t), cosigntest.NewKey(t)
	keys, err := ReadCosignKeys("Secret team-a/keys", map[string][]byte{
		"release.pub": trusted.PublicPEM,
		"README":      []byte("keys of the release team"),
	})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		// sign signs (or not) the artifact digest in repo.
		sign func(t *testing.T, repo, digest string)
		// want is the trusted key's name, or else a part of the error.
		want, err string
	}{
		{"signed by the trusted key", func(t *testing.T, repo, digest string) {
			trusted.Sign(t, repo, digest)
		}, "release.pub", ""},
		{"signed by another key, then by the trusted key", func(t *testing.T, repo, digest string) {
			other.Sign(t, repo, digest)
			trusted.Sign(t, repo, digest)
		}, "release.pub", ""},
		{"unsigned", func(*testing.T, string, string) {}, "", "is not signed: "},
		{"signed by another key", func(t *testing.T, repo, digest string) {
			other.Sign(t, repo, digest)
		}, "", "signature 1: made by none of the keys"},
		{"a trusted signature of another manifest, copied to this one's tag", func(t *testing.T, repo, digest string) {
			elsewhere := "sha256:" + strings.Repeat("0", 64)
			trusted.SignPayload(t, repo, digest, cosigntest.Payload(t, repo, elsewhere))
		}, "", "by key release.pub, but of the manifest " + "sha256:" + strings.Repeat("0", 64)},
		{"a signature that is not base64", func(t *testing.T, repo, digest string) {
			cosigntest.AppendLayer(t, repo, digest, static.NewLayer(cosigntest.Payload(t, repo, digest), "application/vnd.dev.cosign.simplesigning.v1+json"),
				map[string]string{"dev.cosignproject.cosign/signature": "%%%"})
		}, "", "no base64 signature"},
		{"a layer of another media type", func(t *testing.T, repo, digest string) {
			cosigntest.AppendLayer(t, repo, digest, static.NewLayer([]byte("{}"), "application/json"), nil)
		}, "", `media type "application/json" is not cosign's`},
	}
	host := newTestRegistry(t)
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			repo := fmt.Sprintf("%s/verify/case%d", host, i)
			digest := pushArtifact(t, repo, c.name)
			c.sign(t, repo, digest.String())
			client, err := NewClient(context.Background(), "oci://"+repo, Options{Insecure: true, Addresses: loopback})
			if err != nil {
				t.Fatal(err)
			}
			got, err := client.VerifyCosign(digest, keys)
			if c.err != "" {
				if err == nil || KindOf(err) != Unverified || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("want an Unverified error with %q, got %v", c.err, err)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("want key %q, got %q, %v", c.want, got, err)
			}
		})
	}
}

// A registry that cannot be reached is not a verdict on the signature:
// its error is not Unverified, so it is retried.
func TestVerifyCosignRegistryFailureIsNotAVerdict(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	host := strings.TrimPrefix(srv.URL, "http://")
	srv.Close()
	key := cosigntest.NewKey(t)
	keys, err := ReadCosignKeys("Secret ns/keys", map[string][]byte{"cosign.pub": key.PublicPEM})
	if err != nil {
		t.Fatal(err)
	}
	client, err := NewClient(context.Background(), "oci://"+host+"/gone", Options{Insecure: true, Addresses: loopback})
	if err != nil {
		t.Fatal(err)
	}
	_, err = client.VerifyCosign(v1.Hash{Algorithm: "sha256", Hex: strings.Repeat("a", 64)}, keys)
	if err == nil || KindOf(err) == Unverified {
		t.Fatalf("want a registry error that is not Unverified, got %v", err)
	}
}

// The Secret is tenant input: only .pub values are read, each must be a
// public key, and their number and size are bounded.
func TestReadCosignKeysRefusesUnusableSecrets(t *testing.T) {
	key := cosigntest.NewKey(t).PublicPEM
	many := map[string][]byte{}
	for i := range MaxCosignKeys + 1 {
		many[fmt.Sprintf("k%d.pub", i)] = key
	}
	cases := []struct {
		name string
		data map[string][]byte
		err  string
	}{
		{"one key among other values", map[string][]byte{"cosign.pub": key, "cosign.key": []byte("private, ignored")}, ""},
		{"no .pub value", map[string][]byte{"cosign.key": key}, "holds no cosign public key (a data key ending in .pub)"},
		{"empty", nil, "holds no cosign public key"},
		{"not PEM", map[string][]byte{"cosign.pub": []byte("ssh-ed25519 AAAA")}, `the value of "cosign.pub" is not a PEM public key`},
		{"a private key", map[string][]byte{"cosign.pub": []byte("-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED SIGSTORE PRIVATE KEY-----\n")}, "not a PEM public key"},
		{"too many", many, fmt.Sprintf("more than the limit of %d", MaxCosignKeys)},
		{"too large", map[string][]byte{"big.pub": make([]byte, MaxCosignKeyBytes+1)}, fmt.Sprintf("more than the limit of %d", MaxCosignKeyBytes)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			k, err := ReadCosignKeys("Secret ns/keys", c.data)
			if c.err == "" {
				if err != nil || len(k.keys) != 1 {
					t.Fatalf("want one key, got %v, %v", k, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), "Secret ns/keys") {
				t.Fatalf("want an error naming the Secret with %q, got %v", c.err, err)
			}
		})
	}
}

func newTestRegistry(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// pushArtifact pushes a one-layer artifact whose content is body to repo
// (host/path) and returns its manifest digest.
func pushArtifact(t *testing.T, repo, body string) v1.Hash {
	t.Helper()
	ref, err := name.NewTag(repo+":latest", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.Append(mutate.MediaType(empty.Image, types.OCIManifestSchema1),
		mutate.Addendum{Layer: static.NewLayer([]byte(body), "application/vnd.cncf.flux.content.v1.tar+gzip")})
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}
