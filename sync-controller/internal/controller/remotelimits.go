package controller

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
)

// maxRemoteResponseBytes bounds what a remote API server may send in one
// answer — a list, a discovery document — and in one event of a watch: the
// server is whatever a tenant's kubeconfig names, and sync-controller's
// memory is every tenant's. The largest object etcd stores is 1.5 MiB by
// default; a list of a namespace's objects of one kind under this bound
// is tens of thousands of them.
const maxRemoteResponseBytes = 64 << 20

// boundedTransport caps the body of every response of a remote cluster:
// maxRemoteResponseBytes in all for a request, per line for a watch (a
// JSON watch stream is one event per line, and runs for minutes, so its
// total is not bounded, only each event). A body past the bound fails the
// read with an error that says so; client-go reports it as the request's
// error, and the watcher starts its watch again.
type boundedTransport struct {
	next  http.RoundTripper
	limit int64
}

func (t *boundedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	if req.URL.Query().Get("watch") == "true" || req.URL.Query().Get("watch") == "1" {
		resp.Body = &lineBoundedBody{r: bufio.NewReaderSize(resp.Body, 64<<10), c: resp.Body, limit: t.limit}
	} else {
		resp.Body = &totalBoundedBody{r: resp.Body, limit: t.limit}
	}
	return resp, nil
}

func boundRemoteResponses(limit int64) func(http.RoundTripper) http.RoundTripper {
	return func(next http.RoundTripper) http.RoundTripper { return &boundedTransport{next: next, limit: limit} }
}

// tooLarge is the error of a body past its bound.
func tooLarge(what string, limit int64) error {
	return fmt.Errorf("the remote cluster's %s is larger than %d bytes: refused", what, limit)
}

// totalBoundedBody fails once more than limit bytes were read.
type totalBoundedBody struct {
	r     io.ReadCloser
	limit int64
	read  int64
}

func (b *totalBoundedBody) Read(p []byte) (int, error) {
	if b.read > b.limit {
		return 0, tooLarge("answer", b.limit)
	}
	// Read at most one byte past the limit, to tell "exactly the limit"
	// from "more".
	if max := b.limit - b.read + 1; int64(len(p)) > max {
		p = p[:max]
	}
	n, err := b.r.Read(p)
	b.read += int64(n)
	if b.read > b.limit {
		return 0, tooLarge("answer", b.limit)
	}
	return n, err
}

func (b *totalBoundedBody) Close() error { return b.r.Close() }

// lineBoundedBody fails once a line (a watch event) grows past limit.
type lineBoundedBody struct {
	r     *bufio.Reader
	c     io.Closer
	limit int64
	line  int64 // bytes of the current line so far
}

func (b *lineBoundedBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	chunk := p[:n]
	for len(chunk) > 0 {
		i := bytes.IndexByte(chunk, '\n')
		if i < 0 {
			b.line += int64(len(chunk))
			break
		}
		b.line += int64(i)
		if b.line > b.limit {
			return 0, tooLarge("watch event", b.limit)
		}
		b.line, chunk = 0, chunk[i+1:]
	}
	if b.line > b.limit {
		return 0, tooLarge("watch event", b.limit)
	}
	return n, err
}

func (b *lineBoundedBody) Close() error { return b.c.Close() }
