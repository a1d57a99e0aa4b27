package git

import (
	"fmt"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/ProtonMail/go-crypto/openpgp"
	. "github.com/onsi/gomega"

	sourcev1 "plumb.dev/api/source/v1"
	"plumb.dev/pkg/testgit"
)

func newEntity(t *testing.T, name string) (*openpgp.Entity, string) {
	t.Helper()
	k, err := testgit.NewSigningKey(name)
	if err != nil {
		t.Fatal(err)
	}
	return k.Entity, k.Public
}

// sshKey is a fresh SSH public key in authorized_keys format.
func sshKey(t *testing.T) string {
	t.Helper()
	_, s, err := testgit.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(s.PublicKey())))
}

func TestReadKeyRingIsBounded(t *testing.T) {
	_, one := newEntity(t, "one")
	_, two := newEntity(t, "two")
	many := map[string][]byte{}
	for i := range MaxKeys + 1 {
		many[fmt.Sprintf("k%03d.asc", i)] = []byte(one)
	}
	tests := []struct {
		name  string
		data  map[string][]byte
		keys  int
		error string
	}{
		{name: "one-key-per-value", data: map[string][]byte{"a.asc": []byte(one), "b.asc": []byte(two)}, keys: 2},
		{name: "exports-concatenated-in-one-value", data: map[string][]byte{"team.asc": []byte(one + two)}, keys: 2},
		{name: "garbage", data: map[string][]byte{"a.asc": []byte(one), "b.asc": []byte("ssh-ed25519 AAAA")},
			error: `Secret ns/keys: the value of "b.asc" is not an armored OpenPGP public key`},
		{name: "ssh-keys-one-per-line", keys: 2, data: map[string][]byte{"team.sshpub": []byte("# alice\n" + sshKey(t) + "\n\n" + sshKey(t))}},
		{name: "openpgp-and-ssh", keys: 2, data: map[string][]byte{"a.asc": []byte(one), "b.sshpub": []byte(sshKey(t))}},
		{name: "ssh-garbage-line", data: map[string][]byte{"b.sshpub": []byte(sshKey(t) + "\nssh-ed25519 not-base64")},
			error: `Secret ns/keys: line 2 of "b.sshpub" is not an SSH public key`},
		{name: "ssh-certificate-authority", data: map[string][]byte{"b.sshpub": []byte("cert-authority " + sshKey(t))},
			error: `is a certificate authority, which is not supported`},
		{name: "none", data: map[string][]byte{}, error: "Secret ns/keys holds no public key"},
		{name: "too-many-keys", data: many, error: fmt.Sprintf("Secret ns/keys holds more than %d public keys", MaxKeys)},
		{name: "too-many-bytes", data: map[string][]byte{"a.asc": []byte(one + strings.Repeat("\n", MaxKeyRingBytes))},
			error: fmt.Sprintf("more than the limit of %d", MaxKeyRingBytes)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			k, err := ReadKeyRing("Secret ns/keys", tt.data)
			if tt.error != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.error)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(len(k.entities) + len(k.ssh)).To(Equal(tt.keys))
		})
	}
}

func TestVerifyTagNeedsTheCheckedOutCommit(t *testing.T) {
	g := NewWithT(t)
	key, public := newEntity(t, "trusted")
	srv, err := testgit.NewServer(testgit.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { srv.Close() })
	repo, err := srv.CreateRepo("app")
	g.Expect(err).NotTo(HaveOccurred())
	repo.SignWith(key)
	c1, err := repo.Commit("master", "one", testgit.Files{"a.yaml": "1"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(repo.Tag("v1", c1, "signed")).To(Succeed())
	keys, err := ReadKeyRing("Secret ns/keys", map[string][]byte{"k.asc": []byte(public)})
	g.Expect(err).NotTo(HaveOccurred())

	target, dir, err := fetch(t, repo.URL(), nil, &sourcev1.GitRepositoryRef{Tag: "v1"})
	g.Expect(err).NotTo(HaveOccurred())
	fp, err := VerifyTag(dir, target.RefName, target.Commit, keys)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(fp).To(Equal(fmt.Sprintf("%X", key.PrimaryKey.Fingerprint)))

	// A signed tag vouches for its own commit only.
	other := strings.Repeat("0", 40)
	_, err = VerifyTag(dir, target.RefName, other, keys)
	g.Expect(err).To(MatchError("tag v1 points to commit " + c1 + ", not to the checked-out " + other))
}
