package decrypt

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"filippo.io/age"
	"filippo.io/age/armor"
	"github.com/ProtonMail/go-crypto/openpgp"
	pgparmor "github.com/ProtonMail/go-crypto/openpgp/armor"
)

// maxDataKey bounds what a master key decrypts to: a SOPS data key (or a
// Shamir share of one) is 32 bytes and a little more.
const maxDataKey = 1024

// maxEncryptedDataKey bounds one master key's encrypted data key, the input
// to age or OpenPGP.
const maxEncryptedDataKey = 64 << 10

// dataKey recovers a file's data key with the keys of the Secret only (no
// GnuPG home, no environment, no cloud KMS), as the library does: in each
// key group, the first key that decrypts gives the group's part; with one
// group the part is the key, with several the parts of at least
// shamir_threshold groups are combined.
func (k *Keys) dataKey(m fileMeta) ([]byte, bool) {
	var parts [][]byte
	for _, g := range m.groups {
		if p, ok := k.groupPart(g); ok {
			parts = append(parts, p)
		}
	}
	if len(m.groups) > 1 {
		if len(parts) < m.threshold {
			return nil, false
		}
		key, err := combineShares(parts)
		return key, err == nil
	}
	if len(parts) != 1 {
		return nil, false
	}
	return parts[0], true
}

func (k *Keys) groupPart(g masterKeys) ([]byte, bool) {
	for _, a := range g.age {
		if p, err := k.openAge([]byte(a.EncryptedDataKey)); err == nil {
			return p, true
		}
	}
	for _, p := range g.pgp {
		if b, err := k.openPGP([]byte(p.EncryptedDataKey)); err == nil {
			return b, true
		}
	}
	return nil, false
}

func (k *Keys) openAge(ct []byte) ([]byte, error) {
	if len(k.age) == 0 {
		return nil, errors.New("no age identity in the Secret")
	}
	if len(ct) > maxEncryptedDataKey {
		return nil, fmt.Errorf("encrypted data key of %d bytes is larger than %d", len(ct), maxEncryptedDataKey)
	}
	var src io.Reader = bytes.NewReader(ct)
	if bytes.HasPrefix(bytes.TrimSpace(ct), []byte(armor.Header)) {
		src = armor.NewReader(bytes.NewReader(bytes.TrimSpace(ct)))
	}
	r, err := age.Decrypt(src, k.age...)
	if err != nil {
		return nil, err
	}
	return readDataKey(r)
}

func (k *Keys) openPGP(ct []byte) ([]byte, error) {
	if len(k.pgp) == 0 {
		return nil, errors.New("no OpenPGP key in the Secret")
	}
	if len(ct) > maxEncryptedDataKey {
		return nil, fmt.Errorf("encrypted data key of %d bytes is larger than %d", len(ct), maxEncryptedDataKey)
	}
	block, err := pgparmor.Decode(strings.NewReader(string(ct)))
	if err != nil {
		return nil, fmt.Errorf("the encrypted data key is not an armored OpenPGP message: %v", err)
	}
	// No prompt: a message for a passphrase, or for a key not in the
	// Secret, fails rather than asks.
	md, err := openpgp.ReadMessage(block.Body, k.pgp, nil, nil)
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

// wanted names the keys a file is encrypted for, for the error when none
// of the Secret's decrypts it.
func (m fileMeta) wanted() []string {
	var out []string
	for _, g := range m.groups {
		for _, a := range g.age {
			out = append(out, "age "+a.Recipient)
		}
		for _, p := range g.pgp {
			out = append(out, "pgp "+p.Fingerprint)
		}
		out = append(out, g.others...)
	}
	return out
}
