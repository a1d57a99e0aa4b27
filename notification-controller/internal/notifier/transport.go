package notifier

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"net/url"

	corev1 "k8s.io/api/core/v1"
)

// Keys of a Provider's certSecretRef, Flux's names; the legacy ones are
// read when the new ones are absent, so Flux's older Secrets port too.
const (
	CAKey   = "ca.crt"
	CertKey = "tls.crt"
	KeyKey  = "tls.key"

	legacyCAKey   = "caFile"
	legacyCertKey = "certFile"
	legacyKeyKey  = "keyFile"
)

// Keys of a Provider's proxySecretRef: AddressKey, UsernameKey and
// PasswordKey, as in the Provider's own Secret.

// tlsFromSecret builds the TLS configuration of a certSecretRef: its CA
// replaces the system roots (a provider behind a private CA is reached
// only with that CA), its certificate and key authenticate the client.
// The error names the key at fault, never its value.
func tlsFromSecret(s *corev1.Secret) (*tls.Config, error) {
	value := func(key, legacy string) []byte {
		if v, ok := s.Data[key]; ok {
			return v
		}
		return s.Data[legacy]
	}
	ca, cert, key := value(CAKey, legacyCAKey), value(CertKey, legacyCertKey), value(KeyKey, legacyKeyKey)
	name := s.Namespace + "/" + s.Name
	if len(ca) == 0 && len(cert) == 0 && len(key) == 0 {
		return nil, fmt.Errorf("secret %s has none of the keys %q, %q and %q", name, CAKey, CertKey, KeyKey)
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if len(ca) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(ca) {
			return nil, fmt.Errorf("secret %s key %q holds no PEM certificate", name, CAKey)
		}
		cfg.RootCAs = pool
	}
	switch {
	case len(cert) > 0 && len(key) > 0:
		pair, err := tls.X509KeyPair(cert, key)
		if err != nil {
			// The parser's words may quote the key's PEM type; say only
			// which keys are wrong.
			return nil, fmt.Errorf("secret %s keys %q and %q are not a PEM certificate and its private key", name, CertKey, KeyKey)
		}
		cfg.Certificates = []tls.Certificate{pair}
	case len(cert) > 0 || len(key) > 0:
		return nil, fmt.Errorf("secret %s needs both %q and %q for a client certificate, or neither", name, CertKey, KeyKey)
	}
	return cfg, nil
}

// proxyFromSecret reads a proxySecretRef: the proxy's URL with the
// username and password as its user info, which net/http sends as
// Proxy-Authorization (on the CONNECT of an https:// delivery too).
func proxyFromSecret(s *corev1.Secret) (*url.URL, error) {
	name := s.Namespace + "/" + s.Name
	address := string(s.Data[AddressKey])
	if address == "" {
		return nil, fmt.Errorf("secret %s has no key %q (the proxy's URL)", name, AddressKey)
	}
	u, err := url.Parse(address)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("secret %s key %q is not a valid URL", name, AddressKey)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("secret %s key %q must be an http:// or https:// URL, not %s://", name, AddressKey, u.Scheme)
	}
	if user, ok := s.Data[UsernameKey]; ok {
		u.User = url.UserPassword(string(user), string(s.Data[PasswordKey]))
	}
	return u, nil
}

// ownClient is cfg.Client with the Provider's TLS and proxy: a clone of
// its transport, so the dialer (the address policy, which then judges
// the proxy's address), the timeout and the refusal of redirects stay.
// Keep-alives are off: the dispatcher rebuilds a Provider's notifier
// every few seconds, and idle connections of the transports it drops
// would stay open until they time out.
func (cfg Config) ownClient() (*http.Client, error) {
	var t *http.Transport
	switch rt := cfg.Client.Transport.(type) {
	case nil:
		t = http.DefaultTransport.(*http.Transport).Clone()
	case *http.Transport:
		t = rt.Clone()
	default:
		return nil, fmt.Errorf("the %s provider's certSecretRef or proxySecretRef needs an *http.Transport, not %T", cfg.Type, rt)
	}
	if cfg.TLS != nil {
		t.TLSClientConfig = cfg.TLS.Clone()
	}
	if cfg.Proxy != nil {
		t.Proxy = http.ProxyURL(cfg.Proxy)
	}
	t.DisableKeepAlives = true
	c := *cfg.Client
	c.Transport = t
	return &c, nil
}
