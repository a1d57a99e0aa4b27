package git

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"

	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"github.com/skeema/knownhosts"
)

// Secret data keys read for authentication.
const (
	UsernameKey    = "username"
	PasswordKey    = "password"
	BearerTokenKey = "bearerToken"
	CAKey          = "ca.crt"
	IdentityKey    = "identity"
	KnownHostsKey  = "known_hosts"
)

// Auth is what a fetch authenticates with.
type Auth struct {
	Method   transport.AuthMethod
	CABundle []byte
}

// AuthFromSecret builds the auth for rawURL from a Secret's data (nil data:
// anonymous). tmpDir receives the known_hosts file for SSH; it must outlive
// the fetch. secretName is only used in messages.
func AuthFromSecret(rawURL string, data map[string][]byte, secretName, tmpDir string) (*Auth, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, &Error{Kind: InvalidSpec, Err: fmt.Errorf("invalid URL %q: %w", rawURL, err)}
	}
	a := &Auth{}
	switch u.Scheme {
	case "http", "https":
		if data == nil {
			return a, nil
		}
		a.CABundle = data[CAKey]
		switch {
		case len(data[BearerTokenKey]) > 0:
			a.Method = &githttp.TokenAuth{Token: string(data[BearerTokenKey])}
		case len(data[UsernameKey]) > 0 || len(data[PasswordKey]) > 0:
			a.Method = &githttp.BasicAuth{Username: string(data[UsernameKey]), Password: string(data[PasswordKey])}
		}
		return a, nil
	case "ssh":
		if data == nil {
			return nil, &Error{Kind: AuthFailed, Err: fmt.Errorf("an ssh:// URL needs a secretRef with %s and %s", IdentityKey, KnownHostsKey)}
		}
		identity, known := data[IdentityKey], data[KnownHostsKey]
		if len(identity) == 0 {
			return nil, &Error{Kind: AuthFailed, Err: fmt.Errorf("no %q key (the SSH private key) in Secret %s", IdentityKey, secretName)}
		}
		if len(known) == 0 {
			return nil, &Error{Kind: AuthFailed, Err: fmt.Errorf("no %q key in Secret %s: the SSH host key must be known, an unknown host is refused", KnownHostsKey, secretName)}
		}
		user := "git"
		if u.User != nil && u.User.Username() != "" {
			user = u.User.Username()
		}
		pk, err := gitssh.NewPublicKeys(user, identity, string(data[PasswordKey]))
		if err != nil {
			return nil, &Error{Kind: AuthFailed, Err: fmt.Errorf("cannot read the %s private key of Secret %s: %w", IdentityKey, secretName, err)}
		}
		khFile := filepath.Join(tmpDir, "known_hosts")
		if err := os.WriteFile(khFile, known, 0o600); err != nil {
			return nil, wrap(err)
		}
		db, err := knownhosts.NewDB(khFile)
		if err != nil {
			return nil, &Error{Kind: AuthFailed, Err: fmt.Errorf("cannot parse %s of Secret %s: %w", KnownHostsKey, secretName, err)}
		}
		host := u.Host
		if u.Port() == "" {
			host += ":22"
		}
		pk.HostKeyCallback = db.HostKeyCallback()
		// Offer only the key types known_hosts has for this host, so the
		// server presents a key that can be checked.
		pk.HostKeyAlgorithms = db.HostKeyAlgorithms(host)
		a.Method = pk
		return a, nil
	default:
		return nil, &Error{Kind: InvalidSpec, Err: fmt.Errorf("unsupported URL scheme %q", u.Scheme)}
	}
}
