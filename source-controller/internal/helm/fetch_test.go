package helm_test

import (
	"crypto/tls"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"plumb.dev/pkg/testhelm"
	"plumb.dev/source-controller/internal/helm"
)

// A redirect to another host is refused before anything is sent there; a
// redirect on the same host is followed.
func TestFetcherFollowsRedirectsOnTheSameHostOnly(t *testing.T) {
	var reached atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
	}))
	defer other.Close()
	repo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/away.yaml":
			http.Redirect(w, r, other.URL+"/index.yaml", http.StatusFound)
		case "/moved.yaml":
			http.Redirect(w, r, "/index.yaml", http.StatusFound)
		case "/index.yaml":
			fmt.Fprint(w, "ok")
		}
	}))
	defer repo.Close()
	f := helm.Fetcher{RepoURL: repo.URL, Timeout: 10 * time.Second, Addresses: loopback,
		Credentials: helm.Credentials{Username: "u", Password: "p", PassCredentials: true}}
	if _, err := f.Get(repo.URL+"/away.yaml", 1<<20); !errors.Is(err, helm.ErrRedirect) || !strings.Contains(err.Error(), "another host") {
		t.Fatalf("a redirect to another host: %v", err)
	}
	if reached.Load() != 0 {
		t.Fatal("a request reached the other host")
	}
	b, err := f.Get(repo.URL+"/moved.yaml", 1<<20)
	if err != nil || string(b) != "ok" {
		t.Fatalf("a redirect on the same host: %q, %v", b, err)
	}
}

// An index may name a chart on another host: it gets neither the basic
// auth nor the client certificate, which the repository's host gets.
func TestFetcherGivesCredentialsToTheRepositoryHostOnly(t *testing.T) {
	repo, err := testhelm.NewRepo(testhelm.RepoOptions{TLS: true, ClientAuth: true})
	if err != nil {
		t.Fatal(err)
	}
	defer repo.Close()
	type seen struct {
		auth string
		cert bool
	}
	got := make(chan seen, 1)
	other := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- seen{r.Header.Get("Authorization"), len(r.TLS.PeerCertificates) > 0}
		fmt.Fprint(w, "chart")
	}))
	other.TLS = &tls.Config{ClientAuth: tls.RequestClientCert}
	other.StartTLS()
	defer other.Close()

	cert, key := repo.ClientCert()
	ca := append(append([]byte{}, repo.CA()...), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: other.Certificate().Raw})...)
	tlsConf, err := helm.TLSConfig(map[string][]byte{"tls.crt": cert, "tls.key": key, "ca.crt": ca})
	if err != nil {
		t.Fatal(err)
	}
	f := helm.Fetcher{RepoURL: repo.URL(), Timeout: 10 * time.Second, Addresses: loopback,
		Credentials: helm.Credentials{Username: "u", Password: "p", TLS: tlsConf}}
	if _, err := f.Get(repo.URL()+"/index.yaml", 1<<20); err != nil {
		t.Fatalf("the repository's host, which requires the client certificate: %v", err)
	}
	if _, err := f.Get(other.URL+"/app-1.0.0.tgz", 1<<20); err != nil {
		t.Fatal(err)
	}
	if s := <-got; s.auth != "" || s.cert {
		t.Fatalf("the other host got auth %q, client certificate %v", s.auth, s.cert)
	}

	// With passCredentials both go everywhere.
	f.Credentials.PassCredentials = true
	if _, err := f.Get(other.URL+"/app-1.0.0.tgz", 1<<20); err != nil {
		t.Fatal(err)
	}
	if s := <-got; s.auth == "" || !s.cert {
		t.Fatalf("with passCredentials the other host got auth %q, client certificate %v", s.auth, s.cert)
	}
}
