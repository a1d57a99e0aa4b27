package helm_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"plumb.dev/pkg/netguard"
	"plumb.dev/pkg/testhelm"
	"plumb.dev/source-controller/internal/helm"
)

// loopback is the address policy of the tests, whose servers listen on
// 127.0.0.1.
var loopback = netguard.Policy{AllowLoopback: true}

func chartOf(name, version string) testhelm.Chart {
	return testhelm.Chart{Name: name, Version: version, Files: testhelm.Files{
		"values.yaml":       "a: 1\n",
		"templates/cm.yaml": "kind: ConfigMap\n",
	}}
}

// Fetch resolves a locked version or a range against the index and
// returns the archive as served, checked against the index's digest and
// never loaded: a chart's content is parsed in a chart worker.
func TestRepositoryFetch(t *testing.T) {
	repo, err := testhelm.NewRepo(testhelm.RepoOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer repo.Close()
	for _, v := range []string{"1.0.0", "1.1.0"} {
		if err := repo.Add(chartOf("common", v)); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := repo.Index()
	if err != nil {
		t.Fatal(err)
	}
	index, err := helm.ParseIndex(raw)
	if err != nil {
		t.Fatal(err)
	}
	r := &helm.Repository{URL: repo.URL(), Index: index,
		Fetcher: &helm.Fetcher{RepoURL: repo.URL(), Timeout: 10 * time.Second, Addresses: loopback}}
	for version, want := range map[string]string{"1.0.0": "1.0.0", "^1": "1.1.0"} {
		tgz, err := r.Fetch(context.Background(), "common", version, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		served, err := testhelm.Package(chartOf("common", want))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(tgz, served) {
			t.Fatalf("%s: not the archive of version %s", version, want)
		}
	}
	if _, err := r.Fetch(context.Background(), "common", "^2", 1<<20); err == nil {
		t.Fatal("a range no version matches was fetched")
	}

	// An archive that is not the one the index names.
	index.Entries["common"][0].Digest = strings.Repeat("0", 64)
	if _, err := r.Fetch(context.Background(), "common", "1.1.0", 1<<20); err == nil || !strings.Contains(err.Error(), "digest") {
		t.Fatalf("an archive whose digest is not the index's: %v", err)
	}
	if _, err := (&helm.Repository{URL: "https://x.example"}).Fetch(context.Background(), "common", "", 1<<20); err == nil {
		t.Fatal("a repository without index or registry served a chart")
	}
}

// A server slower than the timeout, and one sending more than the limit.
func TestFetcherBounds(t *testing.T) {
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer slow.Close()
	defer close(release)
	f := helm.Fetcher{RepoURL: slow.URL, Timeout: 200 * time.Millisecond, Addresses: loopback}
	if _, err := f.Get(slow.URL+"/index.yaml", 1<<20); err == nil {
		t.Fatal("a request outlived its timeout")
	}

	big := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		chunk := bytes.Repeat([]byte("x"), 64<<10)
		for range 64 { // 4 MiB
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	defer big.Close()
	f = helm.Fetcher{RepoURL: big.URL, Timeout: 10 * time.Second, Addresses: loopback}
	if _, err := f.Get(big.URL+"/index.yaml", 1<<20); !errors.Is(err, helm.ErrTooLarge) {
		t.Fatalf("a response over the limit: %v", err)
	}
	if b, err := f.Get(big.URL+"/index.yaml", 8<<20); err != nil || len(b) != 4<<20 {
		t.Fatalf("a response under the limit: %d bytes, %v", len(b), err)
	}
}

func TestOCIRef(t *testing.T) {
	for in, want := range map[string]string{
		"oci://127.0.0.1:5000/charts":  "127.0.0.1:5000/charts",
		"oci://ghcr.io/org/charts/":    "ghcr.io/org/charts",
		"oci://registry.example":       "registry.example",
		"oci://r.example/charts:1.0.0": "",
		"oci://user:pw@r.example/c":    "",
		"https://r.example/c":          "",
	} {
		got, err := helm.OCIRef(in)
		if want == "" {
			if err == nil {
				t.Errorf("%s: accepted as %s", in, got)
			}
			continue
		}
		if err != nil || got != want {
			t.Errorf("%s: %q, %v; want %q", in, got, err, want)
		}
	}
}

// An https:// repository whose server redirects to plain http:// is
// refused before anything is sent there.
func TestFetcherRefusesPlainHTTPForAnHTTPSRepository(t *testing.T) {
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("a request reached the plain HTTP server: %s (auth %q)", r.URL, r.Header.Get("Authorization"))
	}))
	defer plain.Close()
	secure := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, plain.URL+r.URL.Path, http.StatusFound)
	}))
	defer secure.Close()
	f := helm.Fetcher{RepoURL: secure.URL, Timeout: 10 * time.Second, Addresses: loopback,
		Credentials: helm.Credentials{Username: "u", Password: "p", PassCredentials: true, TLS: secure.Client().Transport.(*http.Transport).TLSClientConfig}}
	if _, err := f.Get(secure.URL+"/index.yaml", 1<<20); !errors.Is(err, helm.ErrInsecure) {
		t.Fatalf("a redirect to http://: %v", err)
	}
}
