package helm

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"oras.land/oras-go/v2/registry/remote/auth"

	"plumb.dev/pkg/netguard"
	"plumb.dev/source-controller/internal/egress"
)

// Fetcher downloads files of one HTTP chart repository.
type Fetcher struct {
	// RepoURL is the repository's URL; basic auth and the TLS client
	// certificate go only to its scheme and host unless
	// Credentials.PassCredentials.
	RepoURL     string
	Credentials Credentials
	// Timeout bounds each request.
	Timeout time.Duration
	// Addresses is where it may connect (source-controller/internal/egress).
	Addresses netguard.Policy
}

// ErrRedirect is returned for a redirect a repository may not make: to
// another host, or from https:// to http://.
var ErrRedirect = errors.New("redirect refused")

// Get downloads url, refusing more than maxBytes. It is the SDK getter's
// request (basic auth only to the repository's scheme and host unless
// passCredentials, a 200 wanted) with two more rules the getter cannot
// take: a redirect stays on the host that answered it and never goes from
// https to http (Go would follow it anywhere, and forward Authorization to
// subdomains), and the TLS client certificate is offered only to the
// repository's host unless passCredentials (a chart URL of the index may
// name any host).
func (f Fetcher) Get(rawURL string, maxBytes int64) ([]byte, error) {
	repoURL, err := url.Parse(f.RepoURL)
	if err != nil {
		return nil, fmt.Errorf("invalid repository URL: %w", err)
	}
	target, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("invalid URL: %w", err)
	}
	c := &http.Client{
		Transport:     f.transport(repoURL, maxBytes),
		Timeout:       f.Timeout,
		CheckRedirect: sameHostRedirect,
	}
	req, err := http.NewRequest(http.MethodGet, rawURL, http.NoBody)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", "plumb-source-controller")
	cr := f.Credentials
	if cr.Username != "" && cr.Password != "" &&
		(cr.PassCredentials || (repoURL.Scheme == target.Scheme && repoURL.Host == target.Host)) {
		req.SetBasicAuth(cr.Username, cr.Password)
	}
	resp, err := c.Do(req)
	if err != nil {
		switch {
		case errors.Is(err, ErrInsecure):
			return nil, fmt.Errorf("%s: %w", rawURL, ErrInsecure)
		case errors.Is(err, ErrRedirect):
			return nil, fmt.Errorf("%s: %w", rawURL, unwrapURL(err))
		case errors.Is(err, ErrTooLarge):
			return nil, fmt.Errorf("%s is larger than the limit of %d bytes: %w", rawURL, maxBytes, ErrTooLarge)
		case isTimeout(err):
			// Said in words of its own: net/http names Client.Timeout only
			// when its timer wins the race with the request's deadline.
			return nil, fmt.Errorf("%s timed out (spec.timeout %s): %w", rawURL, f.Timeout, unwrapURL(err))
		}
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		// The code, not the reason phrase the server wrote after it.
		return nil, fmt.Errorf("failed to fetch %s : %d %s", rawURL, resp.StatusCode, http.StatusText(resp.StatusCode))
	}
	var buf bytes.Buffer
	if _, err := io.Copy(&buf, io.LimitReader(resp.Body, maxBytes+1)); err != nil {
		if errors.Is(err, ErrTooLarge) {
			return nil, fmt.Errorf("%s is larger than the limit of %d bytes: %w", rawURL, maxBytes, ErrTooLarge)
		}
		return nil, err
	}
	if int64(buf.Len()) > maxBytes {
		return nil, fmt.Errorf("%s is larger than the limit of %d bytes: %w", rawURL, maxBytes, ErrTooLarge)
	}
	return buf.Bytes(), nil
}

// transport offers the client certificate to the repository's host only
// (any host with passCredentials).
func (f Fetcher) transport(repoURL *url.URL, maxBytes int64) http.RoundTripper {
	httpsOnly := repoURL.Scheme == "https"
	return byHost(repoURL.Host, f.Credentials.TLS, f.Credentials.PassCredentials, maxBytes, httpsOnly, f.Addresses)
}

// byHost returns a transport that offers tlsConf's client certificates to
// host only, unless all; other hosts get tlsConf without them (its CAs
// kept). Error answers reach the caller as their excerpt
// (egress.Excerpts).
func byHost(host string, tlsConf *tls.Config, all bool, maxBytes int64, httpsOnly bool, addresses netguard.Policy) http.RoundTripper {
	own := transport(tlsConf, maxBytes, httpsOnly, addresses)
	if tlsConf == nil || len(tlsConf.Certificates) == 0 || all {
		return egress.Excerpts(own)
	}
	anon := tlsConf.Clone()
	anon.Certificates = nil
	return egress.Excerpts(hostRouter{host: host, own: own, other: transport(anon, maxBytes, httpsOnly, addresses)})
}

type hostRouter struct {
	host       string
	own, other http.RoundTripper
}

func (h hostRouter) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Host == h.host {
		return h.own.RoundTrip(req)
	}
	return h.other.RoundTrip(req)
}

// sameHostRedirect follows a redirect only on the host that answered it
// and never from https to http.
func sameHostRedirect(req *http.Request, via []*http.Request) error {
	if err := noDowngrade(req, via); err != nil {
		return err
	}
	prev := via[len(via)-1].URL
	if req.URL.Host != prev.Host {
		return fmt.Errorf("%w: from %s to another host, %s", ErrRedirect, prev.Host, req.URL.Host)
	}
	return nil
}

// noDowngrade follows at most 10 redirects, never from https to http.
func noDowngrade(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return fmt.Errorf("%w: more than 10 redirects", ErrRedirect)
	}
	if prev := via[len(via)-1].URL; prev.Scheme == "https" && req.URL.Scheme != "https" {
		return fmt.Errorf("%w: a redirect from https to %s", ErrInsecure, req.URL.Redacted())
	}
	return nil
}

// isTimeout reports a request that ran out of time.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// unwrapURL drops net/http's "Get <url>: " wrapping.
func unwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// IsUnauthorized reports whether err is a refusal of the credentials
// (HTTP 401 or 403), as Get ("...: 401 Unauthorized") or the registry
// client ("response status code 401: ...") words it, or the registry
// asking for credentials the HelmRepository does not give.
func IsUnauthorized(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, auth.ErrBasicCredentialNotFound) {
		return true
	}
	s := err.Error()
	for _, code := range []string{"401", "403"} {
		if strings.Contains(s, ": "+code+" ") || strings.Contains(s, "status code "+code) {
			return true
		}
	}
	return false
}
