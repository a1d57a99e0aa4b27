package sshsig_test

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"plumb.dev/pkg/sshsig"
	"plumb.dev/pkg/testgit"
)

// newKey returns a fresh Ed25519 signer and its private key in OpenSSH
// PEM form.
func newKey(t *testing.T) (ssh.Signer, []byte) {
	t.Helper()
	pemKey, s, err := testgit.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	return s, pemKey
}

func TestVerifyAcceptsOnlyTheTrustedKeyTheNamespaceAndTheContent(t *testing.T) {
	alice, _ := newKey(t)
	bob, _ := newKey(t)
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	carol, err := ssh.NewSignerFromKey(rsaKey)
	if err != nil {
		t.Fatal(err)
	}
	msg := "tree 1234\nauthor a\n\nmessage\n"
	byAlice, err := sshsig.Sign(alice, "git", strings.NewReader(msg))
	if err != nil {
		t.Fatal(err)
	}
	byCarol, err := sshsig.Sign(carol, "git", strings.NewReader(msg))
	if err != nil {
		t.Fatal(err)
	}
	inFile, err := sshsig.Sign(alice, "file", strings.NewReader(msg))
	if err != nil {
		t.Fatal(err)
	}
	trusted := []ssh.PublicKey{bob.PublicKey(), alice.PublicKey(), carol.PublicKey()}
	tests := []struct {
		name    string
		sig     []byte
		msg     string
		trusted []ssh.PublicKey
		want    ssh.PublicKey
		err     string
	}{
		{name: "ed25519", sig: byAlice, msg: msg, trusted: trusted, want: alice.PublicKey()},
		{name: "rsa-sha2-512", sig: byCarol, msg: msg, trusted: trusted, want: carol.PublicKey()},
		{name: "untrusted-key", sig: byAlice, msg: msg, trusted: []ssh.PublicKey{bob.PublicKey()},
			err: "signed by SSH key " + ssh.FingerprintSHA256(alice.PublicKey()) + ", which is not trusted"},
		{name: "changed-content", sig: byAlice, msg: msg + "x", trusted: trusted, err: "does not match the signed content"},
		{name: "other-namespace", sig: inFile, msg: msg, trusted: trusted, err: `namespace "file", not "git"`},
		{name: "pgp", sig: []byte("-----BEGIN PGP SIGNATURE-----\n\n-----END PGP SIGNATURE-----\n"), msg: msg, trusted: trusted,
			err: "not an armored SSH signature"},
		{name: "too-large", sig: bytes.Repeat([]byte("a"), sshsig.MaxSignatureBytes+1), msg: msg, trusted: trusted, err: "more than the limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key, err := sshsig.Verify(tt.sig, "git", strings.NewReader(tt.msg), tt.trusted)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("got error %v, want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(key.Marshal(), tt.want.Marshal()) {
				t.Fatalf("verified by %s, want %s", ssh.FingerprintSHA256(key), ssh.FingerprintSHA256(tt.want))
			}
		})
	}
	var unknown *sshsig.UnknownKeyError
	if _, err := sshsig.Verify(byAlice, "git", strings.NewReader(msg), []ssh.PublicKey{bob.PublicKey()}); !errors.As(err, &unknown) ||
		!bytes.Equal(unknown.Key.Marshal(), alice.PublicKey().Marshal()) {
		t.Fatalf("got %v, want an UnknownKeyError naming alice's key", err)
	}
}

// TestSignaturesInteroperateWithSSHKeygen checks the format against
// OpenSSH itself, both ways, in Git's namespace.
func TestSignaturesInteroperateWithSSHKeygen(t *testing.T) {
	keygen, err := exec.LookPath("ssh-keygen")
	if err != nil {
		t.Skip("ssh-keygen is not installed")
	}
	signer, pemKey := newKey(t)
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "key")
	write(t, keyFile, pemKey)
	allowed := filepath.Join(dir, "allowed")
	write(t, allowed, append([]byte("signer@plumb.dev "), ssh.MarshalAuthorizedKey(signer.PublicKey())...))
	msg := filepath.Join(dir, "msg")
	write(t, msg, []byte("the signed object\n"))

	// Ours, verified by ssh-keygen.
	ours, err := sshsig.Sign(signer, "git", strings.NewReader("the signed object\n"))
	if err != nil {
		t.Fatal(err)
	}
	write(t, msg+".ours", ours)
	run(t, keygen, "-Y", "verify", "-f", allowed, "-I", "signer@plumb.dev", "-n", "git", "-s", msg+".ours", "<", msg)

	// ssh-keygen's, verified by us.
	run(t, keygen, "-Y", "sign", "-f", keyFile, "-n", "git", msg)
	theirs, err := os.ReadFile(msg + ".sig")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sshsig.Verify(theirs, "git", strings.NewReader("the signed object\n"), []ssh.PublicKey{signer.PublicKey()}); err != nil {
		t.Fatalf("ssh-keygen's signature refused: %v", err)
	}
}

func write(t *testing.T, name string, b []byte) {
	t.Helper()
	if err := os.WriteFile(name, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// run runs args, with a trailing "<", file reading stdin from file.
func run(t *testing.T, args ...string) {
	t.Helper()
	cmd := exec.Command(args[0], args[1:]...)
	if n := len(args); n > 2 && args[n-2] == "<" {
		f, err := os.Open(args[n-1])
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		cmd = exec.Command(args[0], args[1:n-2]...)
		cmd.Stdin = f
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %v\n%s", args, err, out)
	}
}
