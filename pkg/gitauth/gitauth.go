package gitauth

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
)

// Secret data keys read for authentication.
const (
	UsernameKey    = "username"
	PasswordKey    = "password"
	BearerTokenKey = "bearerToken"
	CAKey          = "ca.crt"
	IdentityKey    = "identity"
	KnownHostsKey  = "known_hosts"
	// ProxyAddressKey is the proxy URL of a proxySecretRef; its
	// credentials use UsernameKey and PasswordKey.
	ProxyAddressKey = "address"
)

// Kind classifies an Error.
type Kind int

const (
	// Invalid: the URL or the Secret's shape cannot work; only a change
	// of the spec or the Secret helps.
	Invalid Kind = iota
	// Auth: credentials missing or unreadable.
	Auth
)

// Error is a classified error; its message is Err's.
type Error struct {
	Kind Kind
	Err  error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Credentials are what a Git connection authenticates with.
type Credentials struct {
	// Method is nil for anonymous access.
	Method transport.AuthMethod
	// CABundle is trusted besides the system's CAs for HTTPS.
	CABundle []byte
}

// FromSecret builds the credentials for rawURL from a Secret's data (nil
// data: anonymous). tmpDir receives the known_hosts file for SSH; it
// must outlive the connection. secretName is only used in messages.
func FromSecret(rawURL string, data map[string][]byte, secretName, tmpDir string) (Credentials, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return Credentials{}, &Error{Kind: Invalid, Err: fmt.Errorf("invalid URL %q: %w", rawURL, err)}
	}
	var c Credentials
	switch u.Scheme {
	case "http", "https":
		if data == nil {
			return c, nil
		}
		c.CABundle = data[CAKey]
		switch {
		case len(data[BearerTokenKey]) > 0:
			c.Method = &githttp.TokenAuth{Token: string(data[BearerTokenKey])}
		case len(data[UsernameKey]) > 0 || len(data[PasswordKey]) > 0:
			c.Method = &githttp.BasicAuth{Username: string(data[UsernameKey]), Password: string(data[PasswordKey])}
		}
		return c, nil
	case "ssh":
		if data == nil {
			return c, &Error{Kind: Auth, Err: fmt.Errorf("an ssh:// URL needs a secretRef with %s and %s", IdentityKey, KnownHostsKey)}
		}
		identity, known := data[IdentityKey], data[KnownHostsKey]
		if len(identity) == 0 {
			return c, &Error{Kind: Auth, Err: fmt.Errorf("no %q key (the SSH private key) in Secret %s", IdentityKey, secretName)}
		}
		if len(known) == 0 {
			return c, &Error{Kind: Auth, Err: fmt.Errorf("no %q key in Secret %s: the SSH host key must be known, an unknown host is refused", KnownHostsKey, secretName)}
		}
		user := "git"
		if u.User != nil && u.User.Username() != "" {
			user = u.User.Username()
		}
		pk, err := gitssh.NewPublicKeys(user, identity, string(data[PasswordKey]))
		if err != nil {
			return c, &Error{Kind: Auth, Err: fmt.Errorf("cannot read the %s private key of Secret %s: %w", IdentityKey, secretName, err)}
		}
		khFile := filepath.Join(tmpDir, "known_hosts")
		if err := os.WriteFile(khFile, known, 0o600); err != nil {
			return c, err
		}
		db, err := knownhosts.NewDB(khFile)
		if err != nil {
			return c, &Error{Kind: Auth, Err: fmt.Errorf("cannot parse %s of Secret %s: %w", KnownHostsKey, secretName, err)}
		}
		host := u.Host
		if u.Port() == "" {
			host += ":22"
		}
		pk.HostKeyCallback = db.HostKeyCallback()
		// Offer only the key types known_hosts has for this host, so the
		// server presents a key that can be checked.
		pk.HostKeyAlgorithms = db.HostKeyAlgorithms(host)
		c.Method = pk
		return c, nil
	default:
		return c, &Error{Kind: Invalid, Err: fmt.Errorf("unsupported URL scheme %q", u.Scheme)}
	}
}

// ProxyFromSecret reads the proxy for rawURL from a proxySecretRef's
// data: address (an http://, https:// or socks5:// URL) and optional
// username and password.
func ProxyFromSecret(rawURL string, data map[string][]byte, secretName string) (transport.ProxyOptions, error) {
	invalid := func(format string, args ...any) error {
		return &Error{Kind: Invalid, Err: fmt.Errorf("spec.proxySecretRef: Secret "+secretName+": "+format, args...)}
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
