package git

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

	"plumb.dev/source-controller/internal/egress"
)

// go-git's transports are process-wide: one HTTP client for http:// and
// https://, whose RoundTripper is the one each fetch puts in its context
// (reach), so every fetch connects with its own address policy, CA bundle
// and proxy. A request without one fails: nothing goes out unchecked.
// go-git would read ~/.ssh/config, whose Hostname could send an SSH
// connection elsewhere than the address reach checked: it reads none.
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
		return nil, errors.New("no transport in the request's context: Git requests go through ListRefs and Checkout")
	}
	return t.RoundTrip(req)
}

// connection is how one fetch reaches the remote: the context, URL and
// auth to give go-git, and done to call when it is over.
type connection struct {
	ctx  context.Context
	url  string
	auth transport.AuthMethod
	done func()
}

// reach prepares a fetch of rawURL under a.Addresses
// (source-controller/internal/egress).
//
// http:// and https://: a transport of the fetch's own, in the context,
// that connects only where the policy allows (judged at dial time: every
// redirect too), trusts a.CABundle besides the system's CAs, goes
// through a.Proxy or else the environment's proxy, and hands go-git error
// answers as their excerpt. go-git is not given the CA bundle or the
// proxy: it would build a transport of its own.
//
// ssh://: go-git takes no dialer for SSH, so the host is resolved here,
// the first address the policy allows is kept, and go-git connects to
// that address; the host key is still checked against known_hosts under
// the host's name.
func reach(ctx context.Context, rawURL string, a *Auth) (connection, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return connection{}, &Error{Kind: InvalidSpec, Err: fmt.Errorf("invalid URL %q: %w", rawURL, err)}
	}
	if u.Scheme == "ssh" {
		return reachSSH(ctx, u, a)
	}
	t := egress.Transport(a.Addresses)
	if len(a.CABundle) > 0 {
		// As go-git does with a CA bundle.
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		pool.AppendCertsFromPEM(a.CABundle)
		t.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	if a.Proxy.URL != "" {
		p, err := a.Proxy.FullURL()
		if err != nil {
			return connection{}, &Error{Kind: InvalidSpec, Err: fmt.Errorf("spec.proxySecretRef: %w", err)}
		}
		t.Proxy = http.ProxyURL(p)
	}
	return connection{
		ctx:  context.WithValue(ctx, transportKey{}, egress.Excerpts(t)),
		url:  rawURL,
		auth: a.Method,
		done: t.CloseIdleConnections,
	}, nil
}

func reachSSH(ctx context.Context, u *url.URL, a *Auth) (connection, error) {
	host, port := u.Hostname(), u.Port()
	if port == "" {
		port = "22"
	}
	var addrs []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{ip}
	} else if addrs, err = net.DefaultResolver.LookupNetIP(ctx, "ip", host); err != nil {
		return connection{}, fmt.Errorf("cannot reach the server: %w", err)
	}
	var pinned netip.Addr
	var refused error
	for _, ip := range addrs {
		if err := a.Addresses.Check(ip); err != nil {
			if refused == nil {
				refused = err
			}
			continue
		}
		pinned = ip.Unmap()
		break
	}
	if !pinned.IsValid() {
		return connection{}, fmt.Errorf("%s: %w", host, refused)
	}
	pk, ok := a.Method.(*gitssh.PublicKeys)
	if !ok {
		return connection{}, &Error{Kind: AuthFailed, Err: errors.New("an ssh:// URL needs an SSH key")}
	}
	named := *pk
	check, name := pk.HostKeyCallback, net.JoinHostPort(host, port)
	named.HostKeyCallback = func(_ string, remote net.Addr, key ssh.PublicKey) error {
		return check(name, remote, key)
	}
	pu := *u
	pu.Host = net.JoinHostPort(pinned.String(), port)
	return connection{ctx: ctx, url: pu.String(), auth: &named, done: func() {}}, nil
}
