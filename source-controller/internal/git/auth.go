package git

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"github.com/skeema/knownhosts"

	"plumb.dev/pkg/netguard"
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

// Auth is how a fetch reaches and authenticates to the remote.
type Auth struct {
	Method   transport.AuthMethod
	CABundle []byte
	// Proxy is the proxy of http:// and https:// fetches (see ProxyFromSecret);
	// zero: none.
	Proxy transport.ProxyOptions
	// Addresses is where a fetch may connect
	// (source-controller/internal/egress); the zero policy refuses
	// loopback and private addresses.
	Addresses netguard.Policy
}

// Secret data keys of spec.proxySecretRef.
const (
	ProxyAddressKey = "address"
	// The proxy's credentials use UsernameKey and PasswordKey.
)

// ProxyFromSecret reads the proxy of spec.proxySecretRef for rawURL from a
// Secret's data: address (an http://, https:// or socks5:// URL) and
// optional username and password. A proxy for an ssh:// URL is refused
// rather than ignored, so that no connection silently goes around it
// (docs/design/source.md).
func ProxyFromSecret(rawURL string, data map[string][]byte, secretName string) (transport.ProxyOptions, error) {
	invalid := func(format string, args ...any) error {
		return &Error{Kind: InvalidSpec, Err: fmt.Errorf("spec.proxySecretRef: Secret "+secretName+": "+format, args...)}
	}
	if u, err := url.Parse(rawURL); err == nil && u.Scheme == "ssh" {
		return transport.ProxyOptions{}, invalid("a proxy is only used for http:// and https:// URLs, not for %s", u.Scheme+"://")
	}
	addr := strings.TrimSpace(string(data[ProxyAddressKey]))
	if addr == "" {
		return transport.ProxyOptions{}, invalid("no %q key (the proxy URL)", ProxyAddressKey)
	}
	u, err := url.Parse(addr)
	if err != nil || u.Host == "" {
		return transport.ProxyOptions{}, invalid("%q is not a proxy URL (http://host:port, https://host:port or socks5://host:port)", ProxyAddressKey)
	}
	switch u.Scheme {
	case "http", "https", "socks5":
	default:
		return transport.ProxyOptions{}, invalid("unsupported proxy scheme %q: use http, https or socks5", u.Scheme)
	}
	if u.User != nil {
		return transport.ProxyOptions{}, invalid("put the proxy credentials in the %q and %q keys, not in the address", UsernameKey, PasswordKey)
	}
	return transport.ProxyOptions{
		URL:      u.String(),
		Username: string(data[UsernameKey]),
		Password: string(data[PasswordKey]),
	}, nil
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
