package testhelm

import (
	"crypto/subtle"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"

	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"

	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/registry"
)

// RegistryOptions configure a Registry. Empty credentials mean anonymous
// access.
type RegistryOptions struct {
	// Username and Password, when set, are required as HTTP basic auth on
	// every /v2/ request.
	Username string
	Password string
}

// Registry is an in-process OCI registry (go-containerregistry's
// pkg/registry) on 127.0.0.1 over plain HTTP.
type Registry struct {
	opts RegistryOptions
	srv  *httptest.Server
	dir  string

	mu       sync.Mutex
	requests int
}

// Repository is the registry path charts are pushed under by Push.
const Repository = "charts"

// NewRegistry starts an empty registry.
func NewRegistry(opts RegistryOptions) (*Registry, error) {
	dir, err := os.MkdirTemp("", "plumb-testhelm-registry-")
	if err != nil {
		return nil, err
	}
	r := &Registry{opts: opts, dir: dir}
	handler := ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0)))
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.requests++
		r.mu.Unlock()
		if opts.Username != "" || opts.Password != "" {
			u, p, ok := req.BasicAuth()
			if !ok || subtle.ConstantTimeCompare([]byte(u), []byte(opts.Username)) != 1 ||
				subtle.ConstantTimeCompare([]byte(p), []byte(opts.Password)) != 1 {
				w.Header().Set("WWW-Authenticate", `Basic realm="testhelm"`)
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
		}
		handler.ServeHTTP(w, req)
	}))
	return r, nil
}

// Host returns 127.0.0.1:<port>.
func (r *Registry) Host() string { return strings.TrimPrefix(r.srv.URL, "http://") }

// URL returns oci://127.0.0.1:<port>/charts, the URL of a HelmRepository of
// type oci (with insecure: true) for the charts Push pushes.
func (r *Registry) URL() string { return "oci://" + r.Host() + "/" + Repository }

// Requests returns how many HTTP requests the registry served.
func (r *Registry) Requests() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.requests
}

// Close stops the server.
func (r *Registry) Close() {
	r.srv.Close()
	os.RemoveAll(r.dir)
}

// Push packages the chart and pushes it with the Helm SDK's registry
// client to 127.0.0.1:<port>/charts/<name>:<version>, which it returns.
func (r *Registry) Push(c Chart) (string, error) {
	tgz, err := Package(c)
	if err != nil {
		return "", err
	}
	return r.PushArchive(tgz)
}

// PushArchive pushes a packaged chart like Push.
func (r *Registry) PushArchive(tgz []byte) (string, error) {
	return r.PushArchiveTo(tgz, Repository)
}

// PushArchiveTo pushes a packaged chart to
// 127.0.0.1:<port>/<repository>/<name>:<version>, which it returns: the
// path a real registry serves it under (jetstack/charts,
// envoyproxy), for a test that keeps a repository's chart URLs but for
// the host.
func (r *Registry) PushArchiveTo(tgz []byte, repository string) (string, error) {
	ch, err := loader.LoadArchive(strings.NewReader(string(tgz)))
	if err != nil {
		return "", fmt.Errorf("load archive: %w", err)
	}
	opts := []registry.ClientOption{
		registry.ClientOptPlainHTTP(),
		registry.ClientOptWriter(io.Discard),
		// Its own empty credentials file, never the user's.
		registry.ClientOptCredentialsFile(filepath.Join(r.dir, "config.json")),
	}
	if r.opts.Username != "" {
		opts = append(opts, registry.ClientOptBasicAuth(r.opts.Username, r.opts.Password))
	}
	client, err := registry.NewClient(opts...)
	if err != nil {
		return "", err
	}
	// OCI tags cannot hold "+": Helm writes it as "_".
	ref := fmt.Sprintf("%s/%s/%s:%s", r.Host(), repository, ch.Name(), strings.ReplaceAll(ch.Metadata.Version, "+", "_"))
	if _, err := client.Push(tgz, ref, registry.PushOptCreationTime("2020-01-01T00:00:00Z")); err != nil {
		return "", fmt.Errorf("push %s: %w", ref, err)
	}
	return ref, nil
}
