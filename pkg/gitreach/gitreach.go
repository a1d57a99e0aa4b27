package gitreach

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"

	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"golang.org/x/crypto/ssh"

	"plumb.dev/pkg/egress"
	"plumb.dev/pkg/netguard"
)

func init() {
	c := &http.Client{Transport: contextTransport{}}
	client.InstallProtocol("http", githttp.NewClient(c))
	client.InstallProtocol("https", githttp.NewClient(c))
	gitssh.DefaultSSHConfig = nil
}

type transportKey struct{}

// contextTransport sends a request through the RoundTripper of its
// context.
type contextTransport struct{}

func (contextTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	t, ok := req.Context().Value(transportKey{}).(http.RoundTripper)
	if !ok {
		return nil, errors.New("no transport in the request's context: Git connections go through gitreach.Reach")
	}
	return t.RoundTrip(req)
}

// Options are how one connection reaches the remote.
type Options struct {
	// Method is the auth (plumb.dev/pkg/gitauth); an ssh:// URL needs
	// *gitssh.PublicKeys.
	Method transport.AuthMethod
	// CABundle is trusted besides the system's CAs for HTTPS.
	CABundle []byte
	// Proxy is the proxy of http:// and https://; zero: the
	// environment's.
	Proxy transport.ProxyOptions
	// Addresses is where the connection may go; the zero policy refuses
	// loopback and private addresses.
	Addresses netguard.Policy
}

// Kind classifies an Error.
type Kind int

const (
	// Invalid: the URL or the proxy cannot work; only the spec helps.
	Invalid Kind = iota
	// Auth: the credentials do not fit the URL.
	Auth
)

// Error is an error of Reach that a retry does not fix.
type Error struct {
	Kind Kind
	Err  error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Connection is what to give go-git: Ctx for every call, URL and Auth in
// its options, and Done to call when the connection is over.
type Connection struct {
	Ctx  context.Context
	URL  string
	Auth transport.AuthMethod
	Done func()
}

// Reach prepares a connection to rawURL under o (see the package doc).
// An address the policy refuses, or a host that does not resolve, is a
// plain error; a bad URL or proxy, or an ssh:// URL without a key, is an
// *Error.
func Reach(ctx context.Context, rawURL string, o Options) (Connection, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return Connection{}, &Error{Kind: Invalid, Err: fmt.Errorf("invalid URL %q: %w", rawURL, err)}
	}
	if u.Scheme == "ssh" {
		return reachSSH(ctx, u, o)
	}
	t := egress.Transport(o.Addresses)
	if len(o.CABundle) > 0 {
		// As go-git does with a CA bundle.
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		pool.AppendCertsFromPEM(o.CABundle)
		t.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	if o.Proxy.URL != "" {
		p, err := o.Proxy.FullURL()
		if err != nil {
			return Connection{}, &Error{Kind: Invalid, Err: fmt.Errorf("spec.proxySecretRef: %w", err)}
		}
		t.Proxy = http.ProxyURL(p)
	}
	return Connection{
		Ctx:  context.WithValue(ctx, transportKey{}, egress.Excerpts(t)),
		URL:  rawURL,
		Auth: o.Method,
		Done: t.CloseIdleConnections,
	}, nil
}

func reachSSH(ctx context.Context, u *url.URL, o Options) (Connection, error) {
	host, port := u.Hostname(), u.Port()
	if port == "" {
		port = "22"
	}
	var addrs []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{ip}
	} else if addrs, err = net.DefaultResolver.LookupNetIP(ctx, "ip", host); err != nil {
		return Connection{}, fmt.Errorf("cannot reach the server: %w", err)
	}
	var pinned netip.Addr
	var refused error
	for _, ip := range addrs {
		if err := o.Addresses.Check(ip); err != nil {
			if refused == nil {
				refused = err
			}
			continue
		}
		pinned = ip.Unmap()
		break
	}
	if !pinned.IsValid() {
		return Connection{}, fmt.Errorf("%s: %w", host, refused)
	}
	pk, ok := o.Method.(*gitssh.PublicKeys)
	if !ok {
		return Connection{}, &Error{Kind: Auth, Err: errors.New("an ssh:// URL needs an SSH key")}
	}
	named := *pk
	check, name := pk.HostKeyCallback, net.JoinHostPort(host, port)
	named.HostKeyCallback = func(_ string, remote net.Addr, key ssh.PublicKey) error {
		return check(name, remote, key)
	}
	pu := *u
	pu.Host = net.JoinHostPort(pinned.String(), port)
	return Connection{Ctx: ctx, URL: pu.String(), Auth: &named, Done: func() {}}, nil
}
