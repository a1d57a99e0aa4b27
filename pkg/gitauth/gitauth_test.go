package gitauth

import (
	"errors"
	"testing"

	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"

	"plumb.dev/pkg/testgit"
)

func TestFromSecretReadsFluxsKeys(t *testing.T) {
	c, err := FromSecret("https://git.example/a.git", map[string][]byte{UsernameKey: []byte("u"), PasswordKey: []byte("p"), CAKey: []byte("pem")}, "ns/s", t.TempDir())
	if b, ok := c.Method.(*githttp.BasicAuth); err != nil || !ok || b.Username != "u" || b.Password != "p" || string(c.CABundle) != "pem" {
		t.Errorf("basic auth: %#v, %v", c, err)
	}
	c, err = FromSecret("https://git.example/a.git", map[string][]byte{BearerTokenKey: []byte("tok"), UsernameKey: []byte("u")}, "ns/s", t.TempDir())
	if b, ok := c.Method.(*githttp.TokenAuth); err != nil || !ok || b.Token != "tok" {
		t.Errorf("a bearer token goes before basic auth: %#v, %v", c, err)
	}
	if c, err := FromSecret("https://git.example/a.git", nil, "", t.TempDir()); err != nil || c.Method != nil {
		t.Errorf("no Secret: %#v, %v", c, err)
	}

	identity, _, err := testgit.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	known := []byte("git.example ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl\n")
	c, err = FromSecret("ssh://deploy@git.example/a.git", map[string][]byte{IdentityKey: identity, KnownHostsKey: known}, "ns/s", t.TempDir())
	if pk, ok := c.Method.(*gitssh.PublicKeys); err != nil || !ok || pk.User != "deploy" || pk.HostKeyCallback == nil {
		t.Errorf("ssh: %#v, %v", c.Method, err)
	}
}

func TestFromSecretClassifiesWhatIsMissing(t *testing.T) {
	identity, _, err := testgit.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		url  string
		data map[string][]byte
		kind Kind
	}{
		"ssh without a Secret":    {"ssh://git.example/a.git", nil, Auth},
		"ssh without known_hosts": {"ssh://git.example/a.git", map[string][]byte{IdentityKey: identity}, Auth},
		"ssh with a bad key":      {"ssh://git.example/a.git", map[string][]byte{IdentityKey: []byte("x"), KnownHostsKey: []byte("x")}, Auth},
		"unsupported scheme":      {"ftp://git.example/a.git", nil, Invalid},
	} {
		_, err := FromSecret(tc.url, tc.data, "ns/s", t.TempDir())
		var e *Error
		if !errors.As(err, &e) || e.Kind != tc.kind {
			t.Errorf("%s: got %v, want kind %d", name, err, tc.kind)
		}
	}
	if _, err := ProxyFromSecret("ssh://git.example/a.git", map[string][]byte{ProxyAddressKey: []byte("http://proxy:3128")}, "ns/p"); err == nil {
		t.Error("a proxy for ssh:// was accepted")
	}
}
