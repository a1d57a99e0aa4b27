package pullrequest_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"plumb.dev/sync-controller/internal/pullrequest"
)

// FuzzList answers every listing with a fuzzed body and paging header:
// whatever a host says, a listing ends within its bounds, without a
// panic, and a page link never leaves the API's host.
func FuzzList(f *testing.F) {
	f.Add([]byte(`[{"number":1,"head":{"ref":"a","sha":"b"},"labels":[{"name":"x"}]}]`), `</repos/o/r/pulls?page=2>; rel="next"`)
	f.Add([]byte(`[{"iid":1,"labels":["x"],"author":{"username":"u"}}]`), "2")
	f.Add([]byte(`{"message":"no"}`), `<https://elsewhere.example/x>; rel="next"`)
	f.Add([]byte(`[]`), "")
	var body []byte
	var paging string
	var hosts []string
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hosts = append(hosts, r.Host)
		w.Header().Set("Link", paging)
		w.Header().Set("X-Next-Page", paging)
		_, _ = w.Write(body)
	}))
	defer srv.Close()
	limits := pullrequest.Limits{MaxPages: 3, MaxPageBytes: 4096, MaxPullRequests: 5}
	c := pullrequest.New(loopback, limits, tlsOf(srv))
	f.Fuzz(func(t *testing.T, b []byte, p string) {
		body, paging = b, p
		for _, host := range []pullrequest.Host{pullrequest.GitHub, pullrequest.GitLab, pullrequest.Gitea} {
			hosts = hosts[:0]
			prs, err := c.List(context.Background(), pullrequest.Repository{Host: host, API: srv.URL, Owner: "o", Repo: "r", Project: "g/p", Token: "t"})
			if err == nil && len(prs) > limits.MaxPullRequests {
				t.Fatalf("%s: %d pull requests, more than the bound", host, len(prs))
			}
			if len(hosts) > limits.MaxPages {
				t.Fatalf("%s: %d requests, more than the page bound", host, len(hosts))
			}
			for _, h := range hosts {
				if h != srv.Listener.Addr().String() {
					t.Fatalf("%s: a request went to %s", host, h)
				}
			}
		}
	})
}
