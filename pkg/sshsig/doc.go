// Package sshsig signs and verifies SSH signatures, the armored
// "-----BEGIN SSH SIGNATURE-----" blocks of `ssh-keygen -Y sign` that Git
// puts on commits and tags when gpg.format is ssh (OpenSSH's
// PROTOCOL.sshsig).
//
//	sig, err := sshsig.Sign(signer, "git", message)        // armored
//	key, err := sshsig.Verify(sig, "git", message, trusted)  // the trusted key that made it
//
// It is written here, on golang.org/x/crypto/ssh, because no library
// served to Plumb fits: go-git verifies OpenPGP only, x/crypto/ssh parses
// keys and checks raw signatures but has no sshsig envelope, and the one
// in sigstore's pkg/signature/ssh fixes the namespace to "file", where Git
// signs in namespace "git". The envelope is small (a magic, a version,
// the signer's key, the namespace, the hash algorithm, the signature) and
// every check OpenSSH makes is kept: the namespace must match, the hash is
// sha256 or sha512, an RSA signature is not SHA-1 ("ssh-rsa"), and the key
// in the signature must be one of the trusted keys — the signature is
// then checked with that trusted key, never with the key the signature
// brings along.
//
// Signatures come from Git objects a tenant controls, so Verify bounds
// what it decodes (MaxSignatureBytes) before parsing.
package sshsig
