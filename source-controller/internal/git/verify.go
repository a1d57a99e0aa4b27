package git

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	pgperrors "github.com/ProtonMail/go-crypto/openpgp/errors"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"golang.org/x/crypto/ssh"

	"plumb.dev/pkg/sshsig"
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

// KeyRing is the set of public keys a GitRepository trusts: OpenPGP keys
// and SSH keys, as Flux reads them from one Secret.
type KeyRing struct {
	entities openpgp.EntityList
	ssh      []ssh.PublicKey
	// source names where the keys come from, for messages.
	source string
}

// SSHKeySuffix marks the values of a verification Secret that hold SSH
// public keys (authorized_keys format), as in Flux; every other value
// holds armored OpenPGP keys (Flux's ".asc", or any name, as before SSH
// keys were known).
const SSHKeySuffix = ".sshpub"

// ReadKeyRing parses the values of data (a Secret's data): those named
// with SSHKeySuffix as SSH public keys, one per line in authorized_keys
// format, the others as armored OpenPGP public keys or key rings; source
// names the Secret in messages. It fails on a value or line that is not
// such a key, on no key at all, and past MaxKeyRingBytes or MaxKeys.
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
		var err error
		if strings.HasSuffix(name, SSHKeySuffix) {
			err = k.addSSH(name, data[name])
		} else {
			err = k.addOpenPGP(name, data[name])
		}
		if err != nil {
			return nil, err
		}
		if len(k.entities)+len(k.ssh) > MaxKeys {
			return nil, fmt.Errorf("%s holds more than %d public keys", source, MaxKeys)
		}
	}
	if len(k.entities)+len(k.ssh) == 0 {
		return nil, fmt.Errorf("%s holds no public key (OpenPGP, or SSH under a name ending in %s)", source, SSHKeySuffix)
	}
	return k, nil
}

// addOpenPGP adds the armored OpenPGP keys of the value name.
func (k *KeyRing) addOpenPGP(name string, v []byte) error {
	for _, block := range armoredBlocks(v) {
		list, err := openpgp.ReadArmoredKeyRing(bytes.NewReader(block))
		if err != nil {
			return fmt.Errorf("%s: the value of %q is not an armored OpenPGP public key: %v", k.source, name, err)
		}
		k.entities = append(k.entities, list...)
		if len(k.entities) > MaxKeys {
			return fmt.Errorf("%s holds more than %d public keys", k.source, MaxKeys)
		}
	}
	return nil
}

// addSSH adds the SSH public keys of the value name, one per line as in
// authorized_keys; blank lines and # comments are skipped. A line that is
// not a key is an error, not skipped: a typo must not quietly drop a key.
// Certificate authorities are refused, as only plain keys are matched.
func (k *KeyRing) addSSH(name string, v []byte) error {
	for i, line := range strings.Split(string(v), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, _, options, _, err := ssh.ParseAuthorizedKey([]byte(line))
		if err != nil {
			return fmt.Errorf("%s: line %d of %q is not an SSH public key: %v", k.source, i+1, name, err)
		}
		if slices.Contains(options, "cert-authority") {
			return fmt.Errorf("%s: line %d of %q is a certificate authority, which is not supported; list the signing keys", k.source, i+1, name)
		}
		k.ssh = append(k.ssh, key)
		if len(k.ssh) > MaxKeys {
			return fmt.Errorf("%s holds more than %d public keys", k.source, MaxKeys)
		}
	}
	return nil
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

// check verifies signature, armored OpenPGP or SSH, over the object
// that encode writes without its signature, and returns the fingerprint
// of the key that made it: the OpenPGP primary key's in hex, the SSH
// key's as SHA256:base64.
func (k *KeyRing) check(what, signature string, encode func(plumbing.EncodedObject) error) (string, error) {
	if strings.TrimSpace(signature) == "" {
		return "", fmt.Errorf("%s is %w", what, ErrNotSigned)
	}
	signed := &plumbing.MemoryObject{}
	if err := encode(signed); err != nil {
		return "", err
	}
	r, err := signed.Reader()
	if err != nil {
		return "", err
	}
	if strings.HasPrefix(signature, "-----BEGIN SSH SIGNATURE-----") {
		return k.checkSSH(what, signature, r)
	}
	signer, err := openpgp.CheckArmoredDetachedSignature(k.entities, r, strings.NewReader(signature), nil)
	switch {
	case errors.Is(err, pgperrors.ErrUnknownIssuer):
		return "", fmt.Errorf("%s is signed with OpenPGP key %s, which is not among the keys of %s", what, issuer(signature), k.source)
	case err != nil:
		return "", fmt.Errorf("%s has no valid signature by the keys of %s: %v", what, k.source, err)
	}
	return fmt.Sprintf("%X", signer.PrimaryKey.Fingerprint), nil
}

// checkSSH verifies an SSH signature (Git signs in namespace "git").
func (k *KeyRing) checkSSH(what, signature string, signed io.Reader) (string, error) {
	key, err := sshsig.Verify([]byte(signature), "git", signed, k.ssh)
	var unknown *sshsig.UnknownKeyError
	switch {
	case errors.As(err, &unknown):
		return "", fmt.Errorf("%s is signed with SSH key %s, which is not among the keys of %s", what, ssh.FingerprintSHA256(unknown.Key), k.source)
	case err != nil:
		return "", fmt.Errorf("%s has no valid signature by the keys of %s: %v", what, k.source, err)
	}
	return ssh.FingerprintSHA256(key), nil
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
