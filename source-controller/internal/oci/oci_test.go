package oci

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"plumb.dev/pkg/netguard"
)

// loopback is the address policy of the tests, whose registries listen
// on 127.0.0.1.
var loopback = netguard.Policy{AllowLoopback: true}

// The entry of a .dockerconfigjson for the registry's host is used, in
// either of docker's spellings; another host's entry is not sent.
func TestAuthForPicksTheRegistrysEntry(t *testing.T) {
	auth := base64.StdEncoding.EncodeToString([]byte("robot:s3cret"))
	cases := []struct {
		name, config, host string
		want               authn.AuthConfig
		anonymous          bool
		err                string
	}{
		{"auth", `{"auths":{"ghcr.io":{"auth":"` + auth + `"}}}`, "ghcr.io", authn.AuthConfig{Username: "robot", Password: "s3cret"}, false, ""},
		{"username and password", `{"auths":{"ghcr.io":{"username":"u","password":"p"}}}`, "ghcr.io", authn.AuthConfig{Username: "u", Password: "p"}, false, ""},
		{"URL key", `{"auths":{"https://registry.example:5000/v1/":{"username":"u","password":"p"}}}`, "registry.example:5000", authn.AuthConfig{Username: "u", Password: "p"}, false, ""},
		{"docker hub", `{"auths":{"https://index.docker.io/v1/":{"username":"u","password":"p"}}}`, "index.docker.io", authn.AuthConfig{Username: "u", Password: "p"}, false, ""},
		{"another host", `{"auths":{"quay.io":{"username":"u","password":"p"}}}`, "ghcr.io", authn.AuthConfig{}, true, ""},
		{"not JSON", `{"auths":`, "ghcr.io", authn.AuthConfig{}, false, "not valid JSON"},
		{"bad auth", `{"auths":{"ghcr.io":{"auth":"%%%"}}}`, "ghcr.io", authn.AuthConfig{}, false, "not base64"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, err := authFor([]byte(c.config), c.host)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) || KindOf(err) != AuthFailed {
					t.Fatalf("want an AuthFailed error with %q, got %v", c.err, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.anonymous {
				if a != authn.Anonymous {
					t.Fatalf("want anonymous, got %v", a)
				}
				return
			}
			got, err := a.Authorization()
			if err != nil {
				t.Fatal(err)
			}
			if got.Username != c.want.Username || got.Password != c.want.Password {
				t.Fatalf("got %s:%s, want %s:%s", got.Username, got.Password, c.want.Username, c.want.Password)
			}
		})
	}
}

// A URL must name a repository without a tag or digest.
func TestNewClientRefusesURLsThatAreNotARepository(t *testing.T) {
	for _, url := range []string{
		"https://ghcr.io/org/app",
		"oci://ghcr.io/org/app:v1",
		"oci://ghcr.io/org/app@sha256:" + strings.Repeat("a", 64),
		"oci://ghcr.io/Org/App",
	} {
		_, err := NewClient(context.Background(), url, Options{Insecure: false, Addresses: loopback})
		if err == nil || KindOf(err) != InvalidSpec {
			t.Errorf("%s: want an InvalidSpec error, got %v", url, err)
		}
	}
	if _, err := NewClient(context.Background(), "oci://127.0.0.1:5000/org/app", Options{Insecure: false, Addresses: loopback}); err != nil {
		t.Errorf("a repository URL: %v", err)
	}
}

// Only the OCI annotations go to status, bounded in number and size.
func TestBoundedAnnotationsKeepsOCIAnnotationsWithinBounds(t *testing.T) {
	in := map[string]string{
		"org.opencontainers.image.source":   "https://github.com/example/app",
		"org.opencontainers.image.revision": "main@sha1:0123",
		"org.opencontainers.image.huge":     strings.Repeat("x", MaxAnnotationSize+1),
		"com.example.other":                 "dropped",
	}
	for i := 0; i < 2*MaxAnnotations; i++ {
		in["org.opencontainers.image.extra"+strings.Repeat("z", i)] = "v"
	}
	out := boundedAnnotations(in)
	if len(out) != MaxAnnotations {
		t.Fatalf("%d annotations kept, want %d", len(out), MaxAnnotations)
	}
	for k, v := range out {
		if !strings.HasPrefix(k, annotationPrefix) || len(v) > MaxAnnotationSize {
			t.Errorf("kept %s=%q", k, v)
		}
	}
	if out["org.opencontainers.image.source"] != "https://github.com/example/app" || out["org.opencontainers.image.revision"] != "main@sha1:0123" {
		t.Errorf("source and revision must be kept: %v", out)
	}
}

// A registry whose tag list never ends (every page links to another) is
// refused after MaxTagPages pages, and one that lists more than MaxTags
// tags as soon as they are read: neither is read to its end.
func TestTagListsAreReadOnlyUpToTheirBounds(t *testing.T) {
	for _, tc := range []struct {
		name      string
		perPage   int
		wantPages int
		want      string
	}{
		{"endless pages", 1, MaxTagPages, fmt.Sprintf("in more than %d pages", MaxTagPages)},
		{"too many tags", 4000, 3, fmt.Sprintf("more than the %d tags", MaxTags)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var pages atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch {
				case r.URL.Path == "/v2/":
					w.WriteHeader(http.StatusOK)
				case r.URL.Path == "/v2/org/app/tags/list":
					page := pages.Add(1)
					tags := make([]string, tc.perPage)
					for i := range tags {
						tags[i] = fmt.Sprintf("1.%d.%d", page, i)
					}
					w.Header().Set("Link", fmt.Sprintf(`</v2/org/app/tags/list?n=%d&last=%s>; rel="next"`, tc.perPage, tags[len(tags)-1]))
					_ = json.NewEncoder(w).Encode(map[string]any{"name": "org/app", "tags": tags})
				default:
					http.NotFound(w, r)
				}
			}))
			defer srv.Close()
			c, err := NewClient(context.Background(), "oci://"+strings.TrimPrefix(srv.URL, "http://")+"/org/app", Options{Insecure: true, Addresses: loopback})
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = c.Resolve(Ref{SemVer: ">=1.0.0"})
			if err == nil || KindOf(err) != TooLarge || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v (kind %v), want a TooLarge error saying %q", err, KindOf(err), tc.want)
			}
			if got := pages.Load(); got != int64(tc.wantPages) {
				t.Errorf("the registry was asked for %d pages, want %d", got, tc.wantPages)
			}
		})
	}
}

// Credentials from a Secret go over HTTPS only: go-containerregistry's own
// fallback to HTTP for a loopback or private registry takes spec.insecure
// when there are credentials; without credentials it stays as it is.
func TestCredentialsTravelOverPlainHTTPOnlyWhenInsecure(t *testing.T) {
	var sawAuth atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			sawAuth.Store(true)
		}
		switch r.URL.Path {
		case "/v2/":
			w.WriteHeader(http.StatusOK)
		case "/v2/org/app/tags/list":
			_ = json.NewEncoder(w).Encode(map[string]any{"name": "org/app", "tags": []string{"1.0.0"}})
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	creds := []byte(`{"auths":{"` + host + `":{"username":"u","password":"p"}}}`)
	list := func(insecure bool, dockerConfig []byte) error {
		c, err := NewClient(context.Background(), "oci://"+host+"/org/app", Options{Insecure: insecure, DockerConfig: dockerConfig, Addresses: loopback})
		if err != nil {
			return err
		}
		_, err = c.tags()
		return err
	}
	err := list(false, creds)
	if err == nil || KindOf(err) != InvalidSpec || !strings.Contains(err.Error(), "unless spec.insecure is true") {
		t.Fatalf("credentials to a plain-HTTP registry without spec.insecure: got %v (kind %v)", err, KindOf(err))
	}
	if sawAuth.Load() {
		t.Fatal("the credentials reached the plain-HTTP registry")
	}
	if err := list(true, creds); err != nil {
		t.Fatalf("with spec.insecure: %v", err)
	}
	if err := list(false, nil); err != nil {
		t.Fatalf("anonymous, without spec.insecure: %v", err)
	}
}

// A registry may announce a small manifest and send a large one: every
// manifest read is cut at MaxManifestBytes, whether the answer says its
// length or streams it.
func TestManifestsAreReadOnlyUpToTheirBound(t *testing.T) {
	for _, tc := range []struct {
		name          string
		contentLength bool
		redirect      bool
	}{{"announced", true, false}, {"streamed", false, false}, {"redirected", true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			huge := `{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","annotations":{"x":"` +
				strings.Repeat("a", MaxManifestBytes) + `"}}`
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch {
				case r.URL.Path == "/v2/":
					w.WriteHeader(http.StatusOK)
				case tc.redirect && strings.HasPrefix(r.URL.Path, "/v2/org/app/manifests/"):
					http.Redirect(w, r, "/elsewhere/m", http.StatusTemporaryRedirect)
				case strings.HasPrefix(r.URL.Path, "/v2/org/app/manifests/") || r.URL.Path == "/elsewhere/m":
					w.Header().Set("Content-Type", "application/vnd.oci.image.manifest.v1+json")
					if tc.contentLength {
						w.Header().Set("Content-Length", fmt.Sprint(len(huge)))
					} else {
						w.(http.Flusher).Flush() // chunked: no length
					}
					_, _ = w.Write([]byte(huge))
				default:
					http.NotFound(w, r)
				}
			}))
			defer srv.Close()
			c, err := NewClient(context.Background(), "oci://"+strings.TrimPrefix(srv.URL, "http://")+"/org/app", Options{Insecure: true, Addresses: loopback})
			if err != nil {
				t.Fatal(err)
			}
			digest := v1.Hash{Algorithm: "sha256", Hex: strings.Repeat("ab", 32)}
			_, err = c.Pull(digest, "", 1<<20, t.TempDir()+"/layer")
			if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("more than the limit of %d", MaxManifestBytes)) {
				t.Fatalf("got %v, want the manifest refused past %d bytes", err, MaxManifestBytes)
			}
		})
	}
}
