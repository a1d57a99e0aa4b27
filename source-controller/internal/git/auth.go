package git

import (
	"errors"

	"github.com/go-git/go-git/v5/plumbing/transport"

	"plumb.dev/pkg/gitauth"
	"plumb.dev/pkg/netguard"
)

// Secret data keys read for authentication (plumb.dev/pkg/gitauth).
const (
	UsernameKey    = gitauth.UsernameKey
	PasswordKey    = gitauth.PasswordKey
	BearerTokenKey = gitauth.BearerTokenKey
	CAKey          = gitauth.CAKey
	IdentityKey    = gitauth.IdentityKey
	KnownHostsKey  = gitauth.KnownHostsKey
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

// ProxyAddressKey is the Secret data key of spec.proxySecretRef's proxy
// URL; its credentials use UsernameKey and PasswordKey.
const ProxyAddressKey = gitauth.ProxyAddressKey

// ProxyFromSecret reads the proxy of spec.proxySecretRef for rawURL
// (plumb.dev/pkg/gitauth); a proxy for an ssh:// URL is refused rather
// than ignored (docs/design/source.md).
func ProxyFromSecret(rawURL string, data map[string][]byte, secretName string) (transport.ProxyOptions, error) {
	p, err := gitauth.ProxyFromSecret(rawURL, data, secretName)
	return p, classifyAuth(err)
}

// AuthFromSecret builds the auth for rawURL from a Secret's data (nil data:
// anonymous) with plumb.dev/pkg/gitauth. tmpDir receives the known_hosts
// file for SSH; it must outlive the fetch. secretName is only used in
// messages.
func AuthFromSecret(rawURL string, data map[string][]byte, secretName, tmpDir string) (*Auth, error) {
	c, err := gitauth.FromSecret(rawURL, data, secretName, tmpDir)
	if err != nil {
		return nil, classifyAuth(err)
	}
	return &Auth{Method: c.Method, CABundle: c.CABundle}, nil
}

// classifyAuth gives gitauth's errors this package's kinds.
func classifyAuth(err error) error {
	var e *gitauth.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &e) && e.Kind == gitauth.Auth:
		return &Error{Kind: AuthFailed, Err: e.Err}
	case errors.As(err, &e):
		return &Error{Kind: InvalidSpec, Err: e.Err}
	}
	return wrap(err)
}
