package oci

import (
	"bytes"
	"crypto"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/sigstore/sigstore/pkg/signature/payload"
)

// Bounds on what spec.verify reads: the Secret, which a tenant writes,
// and the signature manifest and payloads, which the registry serves.
// Real values are far below them (a cosign public key is under 200
// bytes, a payload under 1 KiB, an artifact has a handful of
// signatures).
const (
	// MaxCosignKeyBytes bounds the bytes of the Secret's .pub values.
	MaxCosignKeyBytes = 256 << 10
	// MaxCosignKeys bounds the number of .pub values.
	MaxCosignKeys = 100
	// MaxSignatureManifestBytes bounds the manifest of the .sig tag.
	MaxSignatureManifestBytes = 1 << 20
	// MaxSignatures bounds the signatures (layers) of that manifest.
	MaxSignatures = 64
	// MaxSignaturePayloadBytes bounds one signed payload.
	MaxSignaturePayloadBytes = 64 << 10
)

// cosign's layout of a signature in a registry (what `cosign sign`
// writes unless told to write a Sigstore bundle): a manifest tagged
// sha256-<hex>.sig in the artifact's repository, one layer per
// signature, each a simple-signing JSON payload naming the signed
// manifest digest, with the base64 signature of the payload's bytes in
// an annotation.
const (
	cosignTagSuffix           = ".sig"
	cosignPayloadMediaType    = "application/vnd.dev.cosign.simplesigning.v1+json"
	cosignSignatureAnnotation = "dev.cosignproject.cosign/signature"
	// CosignKeySuffix ends the Secret data keys that hold public keys, as
	// in Flux (cosign generate-key-pair writes cosign.pub).
	CosignKeySuffix = ".pub"
)

// CosignKeys are the public keys an OCIRepository trusts.
type CosignKeys struct {
	keys []cosignKey
	// source names the Secret, for messages.
	source string
}

type cosignKey struct {
	name     string
	verifier signature.Verifier
}

// ReadCosignKeys parses the values of data (a Secret's data) whose keys
// end in .pub as PEM public keys (ECDSA, RSA or Ed25519, as cosign makes
// them); other keys are ignored. source names the Secret in messages. It
// fails on a .pub value that is not such a key (a half-read trust list is
// a wrong one), on no .pub value at all, and past MaxCosignKeyBytes or
// MaxCosignKeys.
func ReadCosignKeys(source string, data map[string][]byte) (*CosignKeys, error) {
	var names []string
	size := 0
	for name, v := range data {
		if strings.HasSuffix(name, CosignKeySuffix) {
			names = append(names, name)
			size += len(v)
		}
	}
	switch {
	case len(names) == 0:
		return nil, fmt.Errorf("%s holds no cosign public key (a data key ending in %s)", source, CosignKeySuffix)
	case len(names) > MaxCosignKeys:
		return nil, fmt.Errorf("%s holds %d public keys, more than the limit of %d", source, len(names), MaxCosignKeys)
	case size > MaxCosignKeyBytes:
		return nil, fmt.Errorf("%s holds %d bytes of public keys, more than the limit of %d", source, size, MaxCosignKeyBytes)
	}
	sort.Strings(names)
	k := &CosignKeys{source: source}
	for _, name := range names {
		pub, err := cryptoutils.UnmarshalPEMToPublicKey(data[name])
		if err != nil {
			return nil, fmt.Errorf("%s: the value of %q is not a PEM public key: %v", source, name, err)
		}
		// SHA-256, as cosign signs and verifies with a key pair.
		v, err := signature.LoadVerifier(pub, crypto.SHA256)
		if err != nil {
			return nil, fmt.Errorf("%s: the key %q cannot verify signatures: %v", source, name, err)
		}
		k.keys = append(k.keys, cosignKey{name: name, verifier: v})
	}
	return k, nil
}

// CosignSignatureTag is the tag cosign writes the signatures of the
// manifest digest under.
func CosignSignatureTag(digest v1.Hash) string {
	return digest.Algorithm + "-" + digest.Hex + cosignTagSuffix
}

// VerifyCosign checks that the manifest digest carries a cosign signature
// by one of keys, over a payload that names that digest, and returns the
// name of the key (its Secret data key). Its failures that say the
// artifact is not signed as required have the Kind Unverified; others
// (the registry unreachable) are retried as pull failures are.
//
// The payload's docker-reference (the repository the signer named) is
// not compared with spec.url, as `cosign verify` does not compare it by
// default: an artifact copied to another registry with its signature
// stays verified. The transparency log is not consulted (Flux ignores
// it for key-based verification too): the trust is in the keys alone.
func (c *Client) VerifyCosign(digest v1.Hash, keys *CosignKeys) (string, error) {
	tag := c.repo.Tag(CosignSignatureTag(digest))
	desc, err := remote.Head(tag, c.opts...)
	if err != nil {
		if KindOf(err) == NotFound {
			return "", errorf(Unverified, "the artifact %s is not signed: %s has no cosign signature tag %s", digest, c.repo, tag.TagStr())
		}
		return "", fmt.Errorf("reading the cosign signatures of %s: %w", digest, err)
	}
	if desc.Size > MaxSignatureManifestBytes {
		return "", errorf(Unverified, "the signature manifest %s is %d bytes, more than the limit of %d", tag.TagStr(), desc.Size, MaxSignatureManifestBytes)
	}
	// By digest, so that the manifest read is the one measured.
	img, err := remote.Image(c.repo.Digest(desc.Digest.String()), c.opts...)
	if err != nil {
		return "", fmt.Errorf("reading the cosign signatures of %s: %w", digest, err)
	}
	m, err := img.Manifest()
	if err != nil {
		return "", fmt.Errorf("reading the cosign signatures of %s: %w", digest, err)
	}
	if len(m.Layers) > MaxSignatures {
		return "", errorf(Unverified, "the signature manifest %s has %d layers, more than the limit of %d", tag.TagStr(), len(m.Layers), MaxSignatures)
	}
	var problems []string
	for i, l := range m.Layers {
		name, problem, err := c.checkSignature(img, l, digest, keys)
		if err != nil {
			return "", err
		}
		if problem == "" {
			return name, nil
		}
		problems = append(problems, fmt.Sprintf("signature %d: %s", i+1, problem))
	}
	if len(problems) == 0 {
		return "", errorf(Unverified, "the artifact %s is not signed: the signature manifest %s has no layer", digest, tag.TagStr())
	}
	return "", errorf(Unverified, "the artifact %s has no valid cosign signature by the keys of %s (%s)",
		digest, keys.source, strings.Join(problems, "; "))
}

// checkSignature checks one layer of the signature manifest: the key
// that made it, or why it does not count. The error is a registry
// failure.
func (c *Client) checkSignature(img v1.Image, l v1.Descriptor, digest v1.Hash, keys *CosignKeys) (key, problem string, err error) {
	if string(l.MediaType) != cosignPayloadMediaType {
		return "", fmt.Sprintf("media type %q is not cosign's %s", l.MediaType, cosignPayloadMediaType), nil
	}
	if l.Size > MaxSignaturePayloadBytes {
		return "", fmt.Sprintf("the payload is %d bytes, more than the limit of %d", l.Size, MaxSignaturePayloadBytes), nil
	}
	sig, err := base64.StdEncoding.DecodeString(l.Annotations[cosignSignatureAnnotation])
	if err != nil || len(sig) == 0 {
		return "", "no base64 signature in the annotation " + cosignSignatureAnnotation, nil
	}
	body, err := readBlob(img, l.Digest)
	if err != nil {
		return "", "", fmt.Errorf("reading the cosign signature payload %s: %w", l.Digest, err)
	}
	for _, k := range keys.keys {
		if k.verifier.VerifySignature(bytes.NewReader(sig), bytes.NewReader(body)) == nil {
			key = k.name
			break
		}
	}
	if key == "" {
		return "", "made by none of the keys", nil
	}
	// Only a verified payload is parsed.
	var p payload.Cosign
	if err := json.Unmarshal(body, &p); err != nil {
		return "", fmt.Sprintf("by key %s, but its payload is not a cosign signature payload: %v", key, err), nil
	}
	if got := p.Image.DigestStr(); got != digest.String() {
		return "", fmt.Sprintf("by key %s, but of the manifest %s, not %s", key, got, digest), nil
	}
	return key, "", nil
}

// readBlob reads a payload of at most MaxSignaturePayloadBytes;
// go-containerregistry checks its digest as it is read.
func readBlob(img v1.Image, digest v1.Hash) ([]byte, error) {
	l, err := img.LayerByDigest(digest)
	if err != nil {
		return nil, err
	}
	rc, err := l.Compressed()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, MaxSignaturePayloadBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxSignaturePayloadBytes {
		return nil, fmt.Errorf("more than the limit of %d bytes", MaxSignaturePayloadBytes)
	}
	return b, nil
}
