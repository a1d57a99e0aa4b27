package imageupdate

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"encoding/pem"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
)

// openSSHKey is key as identity holds it, encrypted with password unless
// it is empty.
func openSSHKey(t *testing.T, key any, password string) []byte {
	t.Helper()
	var block *pem.Block
	var err error
	if password != "" {
		block, err = ssh.MarshalPrivateKeyWithPassphrase(key, "bot", []byte(password))
	} else {
		block, err = ssh.MarshalPrivateKey(key, "bot")
	}
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(block)
}

func TestReadSSHSigningKey(t *testing.T) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	small, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	encrypted := openSSHKey(t, priv, "open sesame")
	for _, tc := range []struct {
		name               string
		identity, password []byte
		wantErr            string
	}{
		{name: "plain", identity: openSSHKey(t, priv, "")},
		{name: "plain with a password", identity: openSSHKey(t, priv, ""), password: []byte("unused")},
		{name: "encrypted", identity: encrypted, password: []byte("open sesame")},
		{name: "no password", identity: encrypted, wantErr: "encrypted and the Secret has no password"},
		{name: "wrong password", identity: encrypted, password: []byte("wrong"), wantErr: "cannot decrypt"},
		{name: "small RSA", identity: openSSHKey(t, small, ""), wantErr: "1024 bits, fewer than 2048"},
		{name: "none", wantErr: "no identity"},
		{name: "garbage", identity: []byte("not a key"), wantErr: "not an SSH private key"},
		{name: "too large", identity: make([]byte, MaxSigningKeyBytes+1), wantErr: "more than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			signer, err := ReadSSHSigningKey(tc.identity, tc.password)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want, err := ssh.NewPublicKey(pub)
			if err != nil {
				t.Fatal(err)
			}
			if string(signer.PublicKey().Marshal()) != string(want.Marshal()) {
				t.Error("the signer is not the identity's key")
			}
		})
	}
}
