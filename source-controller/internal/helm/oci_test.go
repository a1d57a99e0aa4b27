package helm_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"plumb.dev/source-controller/internal/helm"
)

// tagRegistry serves /v2/ and the tag list of charts/app with page,
// which writes one page of the listing.
func tagRegistry(t *testing.T, page func(w http.ResponseWriter, r *http.Request)) (*helm.Registry, string) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v2/":
			w.WriteHeader(http.StatusOK)
		case "/v2/charts/app/tags/list":
			page(w, r)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	reg, err := helm.NewRegistry(host, helm.Credentials{}, true, 5*time.Second, 1<<20, loopback)
	if err != nil {
		t.Fatal(err)
	}
	return reg, host + "/charts/app"
}

// A registry whose every tag page links to itself: the listing stops
// after MaxTagPages pages with an error saying so.
func TestResolveStopsAtThePageLimit(t *testing.T) {
	var pages atomic.Int32
	reg, ref := tagRegistry(t, func(w http.ResponseWriter, r *http.Request) {
		pages.Add(1)
		w.Header().Set("Link", `</v2/charts/app/tags/list?n=1&last=1.0.0>; rel="next"`)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"name":"charts/app","tags":["1.0.0"]}`)
	})
	_, err := reg.Resolve(context.Background(), ref, "*")
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("exceeded %d pages", helm.MaxTagPages)) {
		t.Fatalf("err = %v, want the page limit", err)
	}
	if int(pages.Load()) != helm.MaxTagPages {
		t.Fatalf("%d pages requested, want %d", pages.Load(), helm.MaxTagPages)
	}
}

// More than MaxTags tags, on few pages, are refused.
func TestResolveStopsAtTheTagLimit(t *testing.T) {
	reg, ref := tagRegistry(t, func(w http.ResponseWriter, r *http.Request) {
		tags := make([]string, helm.MaxTags/2+1)
		for i := range tags {
			tags[i] = fmt.Sprintf(`"1.0.%d"`, i)
		}
		w.Header().Set("Link", `</v2/charts/app/tags/list?n=1&last=x>; rel="next"`)
		fmt.Fprintf(w, `{"name":"charts/app","tags":[%s]}`, strings.Join(tags, ","))
	})
	_, err := reg.Resolve(context.Background(), ref, "*")
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("more than %d tags", helm.MaxTags)) {
		t.Fatalf("err = %v, want the tag limit", err)
	}
}

// The listing ends with its context (the reconcile's deadline), however
// many pages the registry still links to.
func TestResolveEndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var pages atomic.Int32
	reg, ref := tagRegistry(t, func(w http.ResponseWriter, r *http.Request) {
		if pages.Add(1) == 3 {
			cancel()
		}
		w.Header().Set("Link", `</v2/charts/app/tags/list?n=1&last=1.0.0>; rel="next"`)
		fmt.Fprint(w, `{"name":"charts/app","tags":["1.0.0"]}`)
	})
	_, err := reg.Resolve(ctx, ref, "*")
	if err == nil || !strings.Contains(err.Error(), "context canceled") {
		t.Fatalf("err = %v, want the context's end", err)
	}
	if int(pages.Load()) >= helm.MaxTagPages {
		t.Fatalf("%d pages requested after the context ended", pages.Load())
	}
}

// An ordinary listing over two pages resolves the newest in range, "_"
// read as "+".
func TestResolveAcrossPages(t *testing.T) {
	reg, ref := tagRegistry(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("last") == "" {
			w.Header().Set("Link", `</v2/charts/app/tags/list?last=1.0.0>; rel="next"`)
			fmt.Fprint(w, `{"name":"charts/app","tags":["1.0.0","latest"]}`)
			return
		}
		fmt.Fprint(w, `{"name":"charts/app","tags":["1.2.0_build.1","2.0.0"]}`)
	})
	tag, err := reg.Resolve(context.Background(), ref, "^1")
	if err != nil {
		t.Fatal(err)
	}
	if tag != "1.2.0+build.1" {
		t.Fatalf("tag %q, want 1.2.0+build.1", tag)
	}
}
