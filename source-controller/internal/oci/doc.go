// Package oci pulls one layer of an OCI artifact with go-containerregistry,
// and checks the artifact's cosign signatures, for source-controller's
// OCIRepository.
//
// Resolve turns a repository URL (oci://host/path, no tag or digest) and a
// reference into a manifest digest and a revision in Flux's format:
// "<tag>@sha256:<hex>" for a tag or a semver range (the highest tag in the
// range, among the tags matching semverFilter), "sha256:<hex>" for a
// digest pin. The precedence is Flux's: digest, then semver, then tag, and
// the tag latest when none is set.
//
// Pull fetches the manifest by that digest, selects the first layer (or
// the first with the given media type), refuses it when its declared size
// is over the limit, and downloads it to a file through a reader that
// stops one byte past the limit, so a registry lying about the size
// cannot fill the disk. go-containerregistry checks the blob's digest as
// it is read. The caller extracts it with pkg/artifact's ExtractFile,
// which re-verifies the digest and refuses paths out of the root, links
// that leave it, special files, and archives over its limits.
//
// Credentials come from a kubernetes.io/dockerconfigjson Secret
// (.dockerconfigjson, the "auths" map, username/password or auth); the
// entry for the registry's host is used, anonymous access otherwise.
// Plain HTTP is used when insecure is set, and, as go-containerregistry
// decides for every client, for loopback, RFC 1918 and *.local hosts.
// Every request (notation's and its OCSP and CRL fetches too) connects only
// where NewClient's address policy allows, blob redirects and the token
// realm included, and an error answer's body is its excerpt
// (source-controller/internal/egress).
//
// VerifyCosign checks spec.verify's cosign signatures, key-based: the
// manifest digest must carry, in the layout `cosign sign --key` writes
// (the tag sha256-<hex>.sig in the same repository, one simple-signing
// payload layer per signature, the signature in an annotation), a
// signature by one of the public keys ReadCosignKeys read from the
// Secret's .pub values, over a payload that names that digest. The
// signature manifest, its layers and payloads and the Secret are bounded
// (MaxSignatureManifestBytes, MaxSignatures, MaxSignaturePayloadBytes,
// MaxCosignKeyBytes, MaxCosignKeys); a payload is parsed only once a
// trusted key verified it. Sigstore bundles stored as OCI referrers
// (cosign v3's default), keyless signatures and the transparency log are
// not read: see docs/design/source-verification.md.
//
// The library is github.com/sigstore/sigstore (pkg/signature,
// pkg/cryptoutils, pkg/signature/payload), not cosign's or sigstore-go's:
// it holds cosign's payload type and the key loading and ECDSA, RSA and
// Ed25519 verifiers cosign itself uses, and adds seven small packages to
// the build (and eight go.sum lines), where github.com/sigstore/cosign/v2
// requires some 300 modules (Rekor, Fulcio, TUF, cloud KMS clients) for
// the same check and sigstore-go verifies Sigstore bundles, not the .sig
// tag layout. Its v1.10 line is used because v1.11 needs a newer Go than
// the workspace's. The layout (tag name, media type, annotation key) is
// cosign's and is written here as constants: three strings are not worth
// cosign's module graph.
//
// VerifyNotation checks notation signatures with notation-go (the
// library of the notation CLI, so a trust policy behaves as with
// `notation verify`): ReadNotationTrust reads trustpolicy.json and the
// .crt/.pem certificates of the Secret, every certificate being in every
// trust store the policy names; the signatures are OCI referrers read
// through oras-go with this client's credentials and scheme. notation-go
// is the heavier dependency (about 50 packages and 100 go.sum lines:
// notation-core-go, go-cose, tspclient-go, go-ldap for CRL distribution
// points), taken because notation's envelopes, trust policy and
// revocation rules are not something to rewrite; it is only ever reached
// with provider notation.
//
// Errors carry a Kind (AuthFailed, InvalidSpec, NotFound, TooLarge,
// NoLayer, Unverified) so the reconciler can map them to a reason and a
// retry policy.
package oci
