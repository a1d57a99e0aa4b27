package egress

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"plumb.dev/pkg/message"
	"plumb.dev/pkg/netguard"
)

// DialTimeout bounds a TCP connect.
const DialTimeout = 30 * time.Second

// Transport is net/http's default transport (its proxy from the
// environment, HTTP/2, timeouts and pool) connecting only where p allows.
func Transport(p netguard.Policy) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = p.Dialer(DialTimeout).DialContext
	return t
}

// MaxErrorBodyBytes is how much of an error answer's body is read for its
// excerpt; the rest is not read.
const MaxErrorBodyBytes = 16 << 10

// Excerpts wraps next so that the body of every answer whose status is
// not 2xx is message.Excerpt of its first MaxErrorBodyBytes.
func Excerpts(next http.RoundTripper) http.RoundTripper { return excerpts{next} }

type excerpts struct{ next http.RoundTripper }

func (t excerpts) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil || resp.StatusCode/100 == 2 {
		return resp, err
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, MaxErrorBodyBytes))
	_ = resp.Body.Close()
	e := message.Excerpt(b)
	resp.Body = io.NopCloser(strings.NewReader(e))
	resp.ContentLength = int64(len(e))
	resp.Header.Set("Content-Length", strconv.Itoa(len(e)))
	resp.Header.Del("Content-Encoding")
	resp.Uncompressed = true
	return resp, nil
}

// CloseIdleConnections passes on to next, so a client built on Excerpts
// can let go of its connections.
func (t excerpts) CloseIdleConnections() {
	if c, ok := t.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
