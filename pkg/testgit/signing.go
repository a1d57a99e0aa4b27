package testgit

import (
	"bytes"
	"fmt"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
)

// SigningKey is a fresh OpenPGP key for Repo.SignWith, with what a Secret
// of trusted keys holds of it.
type SigningKey struct {
	// Entity holds the private key, for Repo.SignWith.
	Entity *openpgp.Entity
	// Public is the armored public key (gpg --export --armor).
	Public string
	// Fingerprint is the primary key's, in upper-case hex.
	Fingerprint string
}

// NewSigningKey makes an Ed25519 OpenPGP key for name@plumb.dev (fast to
// generate, unlike RSA).
func NewSigningKey(name string) (SigningKey, error) {
	e, err := openpgp.NewEntity(name, "", name+"@plumb.dev", &packet.Config{Algorithm: packet.PubKeyAlgoEdDSA})
	if err != nil {
		return SigningKey{}, err
	}
	var b bytes.Buffer
	w, err := armor.Encode(&b, openpgp.PublicKeyType, nil)
	if err != nil {
		return SigningKey{}, err
	}
	if err := e.Serialize(w); err != nil {
		return SigningKey{}, err
	}
	if err := w.Close(); err != nil {
		return SigningKey{}, err
	}
	return SigningKey{Entity: e, Public: b.String(), Fingerprint: fmt.Sprintf("%X", e.PrimaryKey.Fingerprint)}, nil
}
