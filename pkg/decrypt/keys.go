package decrypt

import (
	"bytes"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"filippo.io/age"
	"github.com/ProtonMail/go-crypto/openpgp"
)

// The keys of a decryption Secret that hold private keys, by suffix, as in
// Flux.
const (
	AgeKeySuffix = ".agekey"
	PGPKeySuffix = ".asc"
)

// Bounds on a decryption Secret. The API server already caps a Secret at
// about 1 MiB; these keep one Secret from costing many parses per render.
const (
	// MaxKeys bounds the age identities and OpenPGP keys of one Secret.
	MaxKeys = 100
	// MaxSecretBytes bounds the bytes of the keys that are read.
	MaxSecretBytes = 1 << 20
)

// Keys are the private keys of one decryption Secret.
type Keys struct {
	// Secret names where they came from, for messages.
	Secret string
	age    []age.Identity
	pgp    openpgp.EntityList
}

// count is the number of keys.
func (k *Keys) count() int { return len(k.age) + len(k.pgp) }

// ParseKeys reads the age identities and OpenPGP private keys from the
// data of the Secret named secret ("namespace/name"). A key that does not
// parse, an OpenPGP key protected by a passphrase, or more than MaxKeys
// keys is an error naming the Secret's key, never its value.
func ParseKeys(secret string, data map[string][]byte) (*Keys, error) {
	keys := &Keys{Secret: secret}
	names := make([]string, 0, len(data))
	size := 0
	for name, v := range data {
		if isKeyName(name) {
			names = append(names, name)
			size += len(v)
		}
	}
	sort.Strings(names)
	if size > MaxSecretBytes {
		return nil, fmt.Errorf("decryption Secret %s holds %d bytes of keys, more than the %d a decryption Secret may", secret, size, MaxSecretBytes)
	}
	for _, name := range names {
		switch filepath.Ext(name) {
		case AgeKeySuffix:
			ids, err := age.ParseIdentities(bytes.NewReader(data[name]))
			if err != nil {
				return nil, fmt.Errorf("decryption Secret %s key %q: not age identities: %s", secret, name, ageParseError(err))
			}
			keys.age = append(keys.age, ids...)
		case PGPKeySuffix:
			ring, err := openpgp.ReadArmoredKeyRing(bytes.NewReader(data[name]))
			if err != nil {
				return nil, fmt.Errorf("decryption Secret %s key %q: not an armored OpenPGP key: %v", secret, name, err)
			}
			for _, e := range ring {
				if err := usablePrivateKey(e); err != nil {
					return nil, fmt.Errorf("decryption Secret %s key %q: OpenPGP key %X %v", secret, name, e.PrimaryKey.Fingerprint, err)
				}
			}
			keys.pgp = append(keys.pgp, ring...)
		}
		if keys.count() > MaxKeys {
			return nil, fmt.Errorf("decryption Secret %s holds more than %d keys", secret, MaxKeys)
		}
	}
	if keys.count() == 0 {
		return nil, fmt.Errorf("decryption Secret %s has no key ending in %s or %s", secret, AgeKeySuffix, PGPKeySuffix)
	}
	return keys, nil
}

func isKeyName(name string) bool {
	ext := filepath.Ext(name)
	return ext == AgeKeySuffix || ext == PGPKeySuffix
}

// usablePrivateKey refuses a public key alone and a key locked by a
// passphrase: nobody is there to type it.
func usablePrivateKey(e *openpgp.Entity) error {
	if e.PrivateKey == nil {
		return fmt.Errorf("is a public key: the Secret needs the private key (gpg --export-secret-keys --armor)")
	}
	locked := e.PrivateKey.Encrypted
	for _, s := range e.Subkeys {
		if s.PrivateKey != nil && s.PrivateKey.Encrypted {
			locked = true
		}
	}
	if locked {
		return fmt.Errorf("is protected by a passphrase, which render-controller cannot supply: export it without one")
	}
	return nil
}

// ageParseError keeps age's message without any line of the input (age
// quotes a malformed line, which may be most of a private key).
func ageParseError(err error) string {
	msg := err.Error()
	if i := strings.Index(msg, "AGE-SECRET-KEY"); i >= 0 {
		return strings.TrimSpace(msg[:i]) + " (value not shown)"
	}
	return msg
}
