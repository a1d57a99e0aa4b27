package imageupdate

import (
	"crypto/rsa"
	"errors"
	"fmt"
	"io"

	"golang.org/x/crypto/ssh"

	"plumb.dev/pkg/sshsig"
)

// minRSABits is the smallest RSA key ReadSSHSigningKey takes, as Flux
// and OpenSSH's current defaults.
const minRSABits = 2048

// ReadSSHSigningKey reads spec.git.commit.signingKey's Secret values for
// type ssh as Flux names them: identity, an OpenSSH private key, and
// password, when the key is encrypted. Ed25519, ECDSA and RSA keys of
// 2048 bits or more are taken; Git verifies the signature they make with
// gpg.format=ssh.
func ReadSSHSigningKey(identity, password []byte) (ssh.Signer, error) {
	if len(identity) > MaxSigningKeyBytes {
		return nil, fmt.Errorf("identity is %d bytes, more than %d", len(identity), MaxSigningKeyBytes)
	}
	if len(identity) == 0 {
		return nil, errors.New("no identity (the SSH private key) in the Secret")
	}
	key, err := ssh.ParseRawPrivateKey(identity)
	var missing *ssh.PassphraseMissingError
	if errors.As(err, &missing) {
		if len(password) == 0 {
			return nil, errors.New("the key in identity is encrypted and the Secret has no password")
		}
		if key, err = ssh.ParseRawPrivateKeyWithPassphrase(identity, password); err != nil {
			return nil, fmt.Errorf("cannot decrypt the key in identity with the password: %w", err)
		}
	} else if err != nil {
		return nil, fmt.Errorf("identity is not an SSH private key: %w", err)
	}
	if k, ok := key.(*rsa.PrivateKey); ok && k.N.BitLen() < minRSABits {
		return nil, fmt.Errorf("the RSA key in identity has %d bits, fewer than %d", k.N.BitLen(), minRSABits)
	}
	signer, err := ssh.NewSignerFromKey(key)
	if err != nil {
		return nil, fmt.Errorf("identity: %w", err)
	}
	switch t := signer.PublicKey().Type(); t {
	case ssh.KeyAlgoED25519, ssh.KeyAlgoECDSA256, ssh.KeyAlgoECDSA384, ssh.KeyAlgoECDSA521, ssh.KeyAlgoRSA:
		return signer, nil
	default:
		return nil, fmt.Errorf("the key in identity is %s: sign with ed25519, ECDSA or RSA", t)
	}
}

// sshCommitSigner signs a commit in Git's namespace, for go-git's
// CommitOptions.Signer: the armored SSH signature Git writes with
// gpg.format=ssh, in the commit's gpgsig header.
type sshCommitSigner struct{ key ssh.Signer }

func (s sshCommitSigner) Sign(message io.Reader) ([]byte, error) {
	return sshsig.Sign(s.key, "git", message)
}
