package imageupdate

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/ProtonMail/go-crypto/openpgp"
)

// MaxSigningKeyBytes bounds the armored key read from a Secret.
const MaxSigningKeyBytes = 64 << 10

// ReadSigningKey reads spec.git.commit.signingKey's Secret values as Flux
// names them: git.asc, an armored OpenPGP private key, and passphrase,
// when the key is encrypted. It returns the one entity of the key ring,
// its private keys decrypted, for go-git's CommitOptions.SignKey.
func ReadSigningKey(armored, passphrase []byte) (*openpgp.Entity, error) {
	if len(armored) > MaxSigningKeyBytes {
		return nil, fmt.Errorf("git.asc is %d bytes, more than %d", len(armored), MaxSigningKeyBytes)
	}
	ring, err := openpgp.ReadArmoredKeyRing(bytes.NewReader(armored))
	if err != nil {
		return nil, fmt.Errorf("git.asc is not an armored OpenPGP key: %w", err)
	}
	if len(ring) != 1 {
		return nil, fmt.Errorf("git.asc holds %d keys, want one", len(ring))
	}
	e := ring[0]
	if e.PrivateKey == nil {
		return nil, errors.New("git.asc holds a public key only: the private key signs")
	}
	if e.PrivateKey.Encrypted {
		if len(passphrase) == 0 {
			return nil, errors.New("the key in git.asc is encrypted and the Secret has no passphrase")
		}
		if err := e.DecryptPrivateKeys(passphrase); err != nil {
			return nil, fmt.Errorf("cannot decrypt the key in git.asc with the passphrase: %w", err)
		}
	}
	return e, nil
}
