package target

import (
	"fmt"
	"io"
	"net/http"
)

// maxRemoteResponseBytes bounds what a remote API server may send in one
// answer — a list, a discovery document, a watch: the server is whatever
// a tenant's kubeconfig names, and sync-controller's memory is every
// tenant's. The largest object etcd stores is 1.5 MiB by default; a list
// of a namespace's objects of one kind under this bound is tens of
// thousands of them.
const maxRemoteResponseBytes = 64 << 20

// boundedTransport caps the body of every response of a remote cluster at
// maxRemoteResponseBytes. A watch is capped in all too, not per event:
// client-go's watch decoder reads one JSON value at a time, whatever its
// newlines, so only a bound on the whole stream bounds one event. A body
// past the bound fails the read with an error that says so; client-go
// reports it as the request's error, and a watch is started again by its
// informer from the last resourceVersion it saw (a busy cluster's watch
// ends a little earlier than the API server would end it).
type boundedTransport struct {
	next  http.RoundTripper
	limit int64
}

func (t *boundedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	what := "answer"
	if w := req.URL.Query().Get("watch"); w == "true" || w == "1" {
		what = "watch"
	}
	resp.Body = &totalBoundedBody{r: resp.Body, limit: t.limit, what: what}
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
	what  string
}

func (b *totalBoundedBody) Read(p []byte) (int, error) {
	if b.read > b.limit {
		return 0, tooLarge(b.what, b.limit)
	}
	// Read at most one byte past the limit, to tell "exactly the limit"
	// from "more".
	if max := b.limit - b.read + 1; int64(len(p)) > max {
		p = p[:max]
	}
	n, err := b.r.Read(p)
	b.read += int64(n)
	if b.read > b.limit {
		return 0, tooLarge(b.what, b.limit)
	}
	return n, err
}

func (b *totalBoundedBody) Close() error { return b.r.Close() }
