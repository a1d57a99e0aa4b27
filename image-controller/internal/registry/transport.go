package registry

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"plumb.dev/pkg/message"
	"plumb.dev/pkg/netguard"
)

// dialTimeout bounds a TCP connect.
const dialTimeout = 30 * time.Second

// maxErrorBodyBytes is how much of an error answer's body is read for its
// excerpt; the rest is not read.
const maxErrorBodyBytes = 16 << 10

// newTransport is net/http's default transport connecting only where p
// allows, with tlsConfig for HTTPS (nil: Go's), and the layers every
// request goes through: error answers as excerpts, bodies of successes cut
// at maxBody, and, with credentials and without insecure, HTTPS only.
func newTransport(p netguard.Policy, tlsConfig *tls.Config, maxBody int64, httpsOnly bool) http.RoundTripper {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = p.Dialer(dialTimeout).DialContext
	// The environment's proxy would connect onwards to addresses the
	// policy never sees.
	t.Proxy = nil
	if tlsConfig != nil {
		t.TLSClientConfig = tlsConfig
	}
	var rt http.RoundTripper = bounded{next: t, max: maxBody}
	if httpsOnly {
		rt = onlyHTTPS{rt}
	}
	return rt
}

// bounded replaces the body of an error answer with its excerpt, and
// fails the read of a success's body past max bytes (an io.LimitReader
// would end a tag list quietly, as if it were shorter).
type bounded struct {
	next http.RoundTripper
	max  int64
}

func (t bounded) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBodyBytes))
		_ = resp.Body.Close()
		e := message.Excerpt(b)
		resp.Body = io.NopCloser(strings.NewReader(e))
		resp.ContentLength = int64(len(e))
		resp.Header.Set("Content-Length", strconv.Itoa(len(e)))
		resp.Header.Del("Content-Encoding")
		resp.Uncompressed = true
		return resp, nil
	}
	if resp.ContentLength > t.max {
		_ = resp.Body.Close()
		return nil, &Error{Kind: TooLarge, Err: fmt.Errorf("the answer to %s is %d bytes, more than the limit of %d", req.URL.Path, resp.ContentLength, t.max)}
	}
	resp.Body = &limitedBody{ReadCloser: resp.Body, left: t.max, max: t.max, path: req.URL.Path}
	return resp, nil
}

// CloseIdleConnections passes on to next.
func (t bounded) CloseIdleConnections() {
	if c, ok := t.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

type limitedBody struct {
	io.ReadCloser
	left, max int64
	path      string
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		var one [1]byte
		n, err := b.ReadCloser.Read(one[:])
		if n > 0 {
			return 0, &Error{Kind: TooLarge, Err: fmt.Errorf("the answer to %s is more than the limit of %d bytes", b.path, b.max)}
		}
		return 0, err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}

// onlyHTTPS refuses plain HTTP: credentials from a Secret are not sent
// unencrypted unless spec.insecure says so.
type onlyHTTPS struct{ next http.RoundTripper }

func (t onlyHTTPS) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme != "https" {
		return nil, &Error{Kind: InvalidSpec, Err: fmt.Errorf("%s answers only over plain HTTP: the Secret's credentials are sent over HTTPS only, unless spec.insecure is true", req.URL.Host)}
	}
	return t.next.RoundTrip(req)
}
