package sshsig

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/pem"
	"errors"
	"fmt"
	"hash"
	"io"

	"golang.org/x/crypto/ssh"
)

// MaxSignatureBytes bounds an armored signature Verify accepts; an
// Ed25519 one is about 300 bytes, an RSA 8192 one about 2 KiB.
const MaxSignatureBytes = 16 << 10

const (
	magic     = "SSHSIG"
	version   = 1
	pemType   = "SSH SIGNATURE"
	defaultHA = "sha512"
)

// UnknownKeyError is the error of a well-formed signature made by a key
// that is not among the trusted ones.
type UnknownKeyError struct {
	// Key is the one the signature names.
	Key ssh.PublicKey
}

func (e *UnknownKeyError) Error() string {
	return "signed by SSH key " + ssh.FingerprintSHA256(e.Key) + ", which is not trusted"
}

// envelope is the signature blob (PROTOCOL.sshsig, "Armored format"),
// after the 6-byte magic.
type envelope struct {
	Version       uint32
	PublicKey     []byte
	Namespace     string
	Reserved      string
	HashAlgorithm string
	Signature     []byte
}

// signedData is what the key signs (PROTOCOL.sshsig, "Signed Data"),
// after the 6-byte magic.
type signedData struct {
	Namespace     string
	Reserved      string
	HashAlgorithm string
	Hash          []byte
}

var hashes = map[string]func() hash.Hash{
	"sha256": sha256.New,
	"sha512": sha512.New,
}

// toSign is the bytes a key signs for message in namespace with the hash
// algorithm ha (one of hashes).
func toSign(namespace, ha string, message io.Reader) ([]byte, error) {
	h := hashes[ha]()
	if _, err := io.Copy(h, message); err != nil {
		return nil, err
	}
	return append([]byte(magic), ssh.Marshal(signedData{Namespace: namespace, HashAlgorithm: ha, Hash: h.Sum(nil)})...), nil
}

// Sign signs message in namespace with signer, as `ssh-keygen -Y sign -n
// namespace` does, and returns the armored signature. An RSA key signs
// with rsa-sha2-512, as OpenSSH does.
func Sign(signer ssh.Signer, namespace string, message io.Reader) ([]byte, error) {
	data, err := toSign(namespace, defaultHA, message)
	if err != nil {
		return nil, err
	}
	var sig *ssh.Signature
	if as, ok := signer.(ssh.AlgorithmSigner); ok && signer.PublicKey().Type() == ssh.KeyAlgoRSA {
		sig, err = as.SignWithAlgorithm(rand.Reader, data, ssh.KeyAlgoRSASHA512)
	} else {
		sig, err = signer.Sign(rand.Reader, data)
	}
	if err != nil {
		return nil, err
	}
	blob := append([]byte(magic), ssh.Marshal(envelope{
		Version:       version,
		PublicKey:     signer.PublicKey().Marshal(),
		Namespace:     namespace,
		HashAlgorithm: defaultHA,
		Signature:     ssh.Marshal(sig),
	})...)
	return pem.EncodeToMemory(&pem.Block{Type: pemType, Bytes: blob}), nil
}

// Verify checks that armored is a signature of message in namespace by
// one of trusted, and returns that key. It fails with an *UnknownKeyError
// when the signature is well formed but made by a key not in trusted.
func Verify(armored []byte, namespace string, message io.Reader, trusted []ssh.PublicKey) (ssh.PublicKey, error) {
	if len(armored) > MaxSignatureBytes {
		return nil, fmt.Errorf("SSH signature of %d bytes, more than the limit of %d", len(armored), MaxSignatureBytes)
	}
	block, _ := pem.Decode(armored)
	if block == nil || block.Type != pemType {
		return nil, errors.New("not an armored SSH signature")
	}
	if !bytes.HasPrefix(block.Bytes, []byte(magic)) {
		return nil, errors.New("SSH signature without the SSHSIG magic")
	}
	var env envelope
	if err := ssh.Unmarshal(block.Bytes[len(magic):], &env); err != nil {
		return nil, fmt.Errorf("malformed SSH signature: %v", err)
	}
	if env.Version != version {
		return nil, fmt.Errorf("SSH signature version %d, only %d is known", env.Version, version)
	}
	if env.Namespace != namespace {
		return nil, fmt.Errorf("SSH signature for namespace %q, not %q", env.Namespace, namespace)
	}
	if _, ok := hashes[env.HashAlgorithm]; !ok {
		return nil, fmt.Errorf("SSH signature with hash algorithm %q, not sha256 or sha512", env.HashAlgorithm)
	}
	var sig ssh.Signature
	if err := ssh.Unmarshal(env.Signature, &sig); err != nil {
		return nil, fmt.Errorf("malformed SSH signature: %v", err)
	}
	if sig.Format == ssh.KeyAlgoRSA {
		return nil, errors.New("SSH signature made with SHA-1 (ssh-rsa), which is not accepted")
	}
	signer, err := ssh.ParsePublicKey(env.PublicKey)
	if err != nil {
		return nil, fmt.Errorf("SSH signature with an unreadable public key: %v", err)
	}
	key := trustedKey(signer, trusted)
	if key == nil {
		return nil, &UnknownKeyError{Key: signer}
	}
	data, err := toSign(namespace, env.HashAlgorithm, message)
	if err != nil {
		return nil, err
	}
	if err := key.Verify(data, &sig); err != nil {
		return nil, fmt.Errorf("SSH signature by %s does not match the signed content: %v", ssh.FingerprintSHA256(key), err)
	}
	return key, nil
}

// trustedKey returns the key of trusted that is k, or nil.
func trustedKey(k ssh.PublicKey, trusted []ssh.PublicKey) ssh.PublicKey {
	m := k.Marshal()
	for _, t := range trusted {
		if bytes.Equal(t.Marshal(), m) {
			return t
		}
	}
	return nil
}
