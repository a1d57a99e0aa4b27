package helm

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"plumb.dev/pkg/netguard"
	"plumb.dev/source-controller/internal/egress"
)

// ErrTooLarge is returned when a response is longer than the limit.
var ErrTooLarge = errors.New("response exceeds the size limit")

// ErrInsecure is returned for a plain http:// request (a redirect, a chart
// URL in the index) made on behalf of an https:// repository: it would
// carry the credentials, or bring unauthenticated bytes, in clear.
var ErrInsecure = errors.New("plain HTTP refused for an https:// repository")

// headerSlack is read beyond the body limit for status lines, headers and
// TLS framing.
const headerSlack = 64 << 10

// Credentials are what a HelmRepository's Secrets give.
type Credentials struct {
	// Username and Password for basic auth; both or neither.
	Username, Password string
	// TLS is the client configuration (client certificate, CA); nil for
	// the system roots.
	TLS *tls.Config
	// PassCredentials sends basic auth to hosts other than the
	// repository's.
	PassCredentials bool
}

// TLSConfig builds a client TLS configuration from a Secret's tls.crt,
// tls.key and ca.crt; nil when it has none of them. A certificate without
// its key (or the reverse) and a CA that holds no certificate are errors.
func TLSConfig(data map[string][]byte) (*tls.Config, error) {
	cert, key, ca := data["tls.crt"], data["tls.key"], data["ca.crt"]
	if len(cert) == 0 && len(key) == 0 && len(ca) == 0 {
		return nil, nil
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12}
	switch {
	case len(cert) > 0 && len(key) > 0:
		pair, err := tls.X509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("tls.crt and tls.key: %w", err)
		}
		c.Certificates = []tls.Certificate{pair}
	case len(cert) > 0 || len(key) > 0:
		return nil, errors.New("tls.crt and tls.key must be given together")
	}
	if len(ca) > 0 {
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(ca) {
			return nil, errors.New("ca.crt holds no PEM certificate")
		}
		c.RootCAs = pool
	}
	return c, nil
}

// transport returns an HTTP transport whose every connection reads at most
// maxBytes+headerSlack bytes, with tlsConf for https, connecting only where
// addresses allows (source-controller/internal/egress). Keep-alives are off
// so that the bound is per request. With httpsOnly every plain http://
// request fails with ErrInsecure (the Proxy hook sees each request,
// redirects included, before it is sent); otherwise the environment's
// proxy settings apply, as in the SDK's own getter.
func transport(tlsConf *tls.Config, maxBytes int64, httpsOnly bool, addresses netguard.Policy) *http.Transport {
	d := addresses.Dialer(egress.DialTimeout)
	if tlsConf != nil {
		tlsConf = tlsConf.Clone()
	}
	return &http.Transport{
		Proxy: func(req *http.Request) (*url.URL, error) {
			if httpsOnly && req.URL.Scheme != "https" {
				return nil, fmt.Errorf("%w: %s", ErrInsecure, req.URL.Redacted())
			}
			return http.ProxyFromEnvironment(req)
		},
		TLSClientConfig:       tlsConf,
		DisableCompression:    true,
		DisableKeepAlives:     true,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 30 * time.Second,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &boundedConn{Conn: c, left: maxBytes + headerSlack}, nil
		},
	}
}

// boundedConn fails reads past its budget with ErrTooLarge.
type boundedConn struct {
	net.Conn
	mu   sync.Mutex
	left int64
}

func (c *boundedConn) Read(p []byte) (int, error) {
	c.mu.Lock()
	left := c.left
	c.mu.Unlock()
	if left <= 0 {
		return 0, ErrTooLarge
	}
	if int64(len(p)) > left {
		p = p[:left]
	}
	n, err := c.Conn.Read(p)
	c.mu.Lock()
	c.left -= int64(n)
	c.mu.Unlock()
	return n, err
}
