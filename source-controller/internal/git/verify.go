package git

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	pgperrors "github.com/ProtonMail/go-crypto/openpgp/errors"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
)

// Bounds on the Secret of spec.verify, which a tenant writes: the key
// rings are parsed on every verification, so their size is capped well
// below a Secret's own 1 MiB.
const (
	// MaxKeyRingBytes bounds the bytes of all the Secret's values together.
	MaxKeyRingBytes = 256 << 10
	// MaxKeys bounds the number of public keys (primary keys) they hold.
	MaxKeys = 100
)

// ErrNotSigned is wrapped by the error of a commit or tag that carries no
// signature, or of a lightweight tag, which cannot carry one.
var ErrNotSigned = errors.New("not signed")

// KeyRing is the set of OpenPGP public keys a GitRepository trusts.
type KeyRing struct {
	entities openpgp.EntityList
	// source names where the keys come from, for messages.
	source string
}

// ReadKeyRing parses the values of data (a Secret's data) as armored
// OpenPGP public keys or key rings; source names the Secret in messages.
// It fails on a value that is not such a key, on no key at all, and past
// MaxKeyRingBytes or MaxKeys.
func ReadKeyRing(source string, data map[string][]byte) (*KeyRing, error) {
	names := make([]string, 0, len(data))
	size := 0
	for name, v := range data {
		names = append(names, name)
		size += len(v)
	}
	if size > MaxKeyRingBytes {
		return nil, fmt.Errorf("%s holds %d bytes of keys, more than the limit of %d", source, size, MaxKeyRingBytes)
	}
	sort.Strings(names)
	k := &KeyRing{source: source}
	for _, name := range names {
		for _, block := range armoredBlocks(data[name]) {
			list, err := openpgp.ReadArmoredKeyRing(bytes.NewReader(block))
			if err != nil {
				return nil, fmt.Errorf("%s: the value of %q is not an armored OpenPGP public key: %v", source, name, err)
			}
			k.entities = append(k.entities, list...)
			if len(k.entities) > MaxKeys {
				return nil, fmt.Errorf("%s holds more than %d public keys", source, MaxKeys)
			}
		}
	}
	if len(k.entities) == 0 {
		return nil, fmt.Errorf("%s holds no OpenPGP public key", source)
	}
	return k, nil
}

// armoredBlocks splits v at each armor header line, so that a value made
// by concatenating exported keys yields all of them: the OpenPGP reader
// stops after the first block. A value with no header is one block, which
// the reader then refuses.
func armoredBlocks(v []byte) [][]byte {
	header := []byte("-----BEGIN ")
	var blocks [][]byte
	for {
		i := bytes.Index(v[min(1, len(v)):], header)
		if i < 0 {
			return append(blocks, v)
		}
		i++
		blocks = append(blocks, v[:i])
		v = v[i:]
	}
}

// VerifyCommit checks the signature of commit in the repository checked
// out at dir and returns the fingerprint of the primary key that made it.
func VerifyCommit(dir, commit string, keys *KeyRing) (string, error) {
	repo, err := gogit.PlainOpen(dir)
	if err != nil {
		return "", err
	}
	c, err := repo.CommitObject(plumbing.NewHash(commit))
	if err != nil {
		return "", fmt.Errorf("reading commit %s: %w", commit, err)
	}
	return keys.check("commit "+commit, c.PGPSignature, c.EncodeWithoutSignature)
}

// VerifyTag checks the signature of the annotated tag refName in the
// repository checked out at dir, which must point to commit (the one
// checked out), and returns the fingerprint of the primary key that made
// it.
func VerifyTag(dir, refName, commit string, keys *KeyRing) (string, error) {
	what := "tag " + strings.TrimPrefix(refName, "refs/tags/")
	repo, err := gogit.PlainOpen(dir)
	if err != nil {
		return "", err
	}
	ref, err := repo.Reference(plumbing.ReferenceName(refName), false)
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", refName, err)
	}
	tag, err := repo.TagObject(ref.Hash())
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		// The reference names the commit itself.
		return "", fmt.Errorf("%s is a lightweight tag, which carries no signature: %w", what, ErrNotSigned)
	}
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", what, err)
	}
	// The signature must be about the commit the artifact is made of.
	target, err := tag.Commit()
	if err != nil {
		return "", fmt.Errorf("%s does not point to a commit: %w", what, err)
	}
	if target.Hash.String() != commit {
		return "", fmt.Errorf("%s points to commit %s, not to the checked-out %s", what, target.Hash, commit)
	}
	return keys.check(what, tag.PGPSignature, tag.EncodeWithoutSignature)
}

// check verifies signature, armored, over the object that encode writes
// without its signature.
func (k *KeyRing) check(what, signature string, encode func(plumbing.EncodedObject) error) (string, error) {
	if strings.TrimSpace(signature) == "" {
		return "", fmt.Errorf("%s is %w", what, ErrNotSigned)
	}
	if strings.HasPrefix(signature, "-----BEGIN SSH SIGNATURE-----") {
		return "", fmt.Errorf("%s has an SSH signature; only OpenPGP signatures are verified", what)
	}
	signed := &plumbing.MemoryObject{}
	if err := encode(signed); err != nil {
		return "", err
	}
	r, err := signed.Reader()
	if err != nil {
		return "", err
	}
	signer, err := openpgp.CheckArmoredDetachedSignature(k.entities, r, strings.NewReader(signature), nil)
	switch {
	case errors.Is(err, pgperrors.ErrUnknownIssuer):
		return "", fmt.Errorf("%s is signed with key %s, which is not among the keys of %s", what, issuer(signature), k.source)
	case err != nil:
		return "", fmt.Errorf("%s has no valid signature by the keys of %s: %v", what, k.source, err)
	}
	return fmt.Sprintf("%X", signer.PrimaryKey.Fingerprint), nil
}

// issuer names the key that made an armored signature, as its
// fingerprint or else its key ID, for a message; "unknown" when the
// signature does not say.
func issuer(signature string) string {
	block, err := armor.Decode(strings.NewReader(signature))
	if err != nil {
		return "unknown"
	}
	p, err := packet.NewReader(block.Body).Next()
	if err != nil {
		return "unknown"
	}
	sig, ok := p.(*packet.Signature)
	switch {
	case !ok:
		return "unknown"
	case len(sig.IssuerFingerprint) > 0:
		return fmt.Sprintf("%X", sig.IssuerFingerprint)
	case sig.IssuerKeyId != nil:
		return fmt.Sprintf("%016X", *sig.IssuerKeyId)
	}
	return "unknown"
}
