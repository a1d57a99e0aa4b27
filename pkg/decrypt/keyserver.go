package decrypt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"filippo.io/age"
	"filippo.io/age/armor"
	"github.com/ProtonMail/go-crypto/openpgp"
	pgparmor "github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/getsops/sops/v3/keyservice"
)

// maxDataKey bounds what a master key decrypts to: a SOPS data key (or a
// Shamir share of one) is 32 bytes and a little more.
const maxDataKey = 1024

// maxEncryptedDataKey bounds one master key's encrypted data key, the input
// to age or OpenPGP.
const maxEncryptedDataKey = 64 << 10

// keyServer recovers data keys with the keys of one Secret only. It stands
// in for the SOPS library's local key service, which would read GnuPG
// homes, the environment and cloud credentials.
type keyServer struct {
	keys *Keys
}

var errEncryptUnsupported = errors.New("render-controller only decrypts")

func (keyServer) Encrypt(context.Context, *keyservice.EncryptRequest) (*keyservice.EncryptResponse, error) {
	return nil, errEncryptUnsupported
}

func (s keyServer) Decrypt(_ context.Context, req *keyservice.DecryptRequest) (*keyservice.DecryptResponse, error) {
	ct := req.GetCiphertext()
	if len(ct) > maxEncryptedDataKey {
		return nil, fmt.Errorf("encrypted data key of %d bytes is larger than %d", len(ct), maxEncryptedDataKey)
	}
	var (
		plain []byte
		err   error
	)
	switch k := req.GetKey(); {
	case k.GetAgeKey() != nil:
		plain, err = s.age(ct)
	case k.GetPgpKey() != nil:
		plain, err = s.pgp(ct)
	default:
		return nil, fmt.Errorf("only age and OpenPGP keys are supported")
	}
	if err != nil {
		return nil, err
	}
	return &keyservice.DecryptResponse{Plaintext: plain}, nil
}

func (s keyServer) age(ct []byte) ([]byte, error) {
	if len(s.keys.age) == 0 {
		return nil, errors.New("no age identity in the Secret")
	}
	var src io.Reader = bytes.NewReader(ct)
	if bytes.HasPrefix(bytes.TrimSpace(ct), []byte(armor.Header)) {
		src = armor.NewReader(bytes.NewReader(bytes.TrimSpace(ct)))
	}
	r, err := age.Decrypt(src, s.keys.age...)
	if err != nil {
		return nil, err
	}
	return readDataKey(r)
}

func (s keyServer) pgp(ct []byte) ([]byte, error) {
	if len(s.keys.pgp) == 0 {
		return nil, errors.New("no OpenPGP key in the Secret")
	}
	block, err := pgparmor.Decode(strings.NewReader(string(ct)))
	if err != nil {
		return nil, fmt.Errorf("the encrypted data key is not an armored OpenPGP message: %v", err)
	}
	// No prompt: a message for a passphrase, or for a key not in the
	// Secret, fails rather than asks.
	md, err := openpgp.ReadMessage(block.Body, s.keys.pgp, nil, nil)
	if err != nil {
		return nil, err
	}
	return readDataKey(md.UnverifiedBody)
}

func readDataKey(r io.Reader) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxDataKey+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxDataKey {
		return nil, fmt.Errorf("the data key is longer than %d bytes", maxDataKey)
	}
	return b, nil
}
