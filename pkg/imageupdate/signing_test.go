package imageupdate

import (
	"bytes"
	"strings"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
)

// armoredPrivate is e's private key as git.asc holds it, encrypted with
// passphrase unless it is empty.
func armoredPrivate(t *testing.T, e *openpgp.Entity, passphrase string) []byte {
	t.Helper()
	if passphrase != "" {
		if err := e.EncryptPrivateKeys([]byte(passphrase), nil); err != nil {
			t.Fatal(err)
		}
	}
	var b bytes.Buffer
	w, err := armor.Encode(&b, openpgp.PrivateKeyType, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.SerializePrivateWithoutSigning(w, nil); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestReadSigningKeyDecryptsWithThePassphrase(t *testing.T) {
	e, err := openpgp.NewEntity("bot", "", "bot@plumb.dev", &packet.Config{Algorithm: packet.PubKeyAlgoEdDSA})
	if err != nil {
		t.Fatal(err)
	}
	asc := armoredPrivate(t, e, "open sesame")
	if _, err := ReadSigningKey(asc, nil); err == nil || !strings.Contains(err.Error(), "no passphrase") {
		t.Errorf("no passphrase: %v", err)
	}
	if _, err := ReadSigningKey(asc, []byte("wrong")); err == nil {
		t.Error("a wrong passphrase decrypted the key")
	}
	key, err := ReadSigningKey(asc, []byte("open sesame"))
	if err != nil {
		t.Fatal(err)
	}
	if key.PrivateKey == nil || key.PrivateKey.Encrypted {
		t.Error("the key is not decrypted")
	}
	if _, err := ReadSigningKey([]byte("not a key"), nil); err == nil {
		t.Error("garbage was read as a key")
	}
}
