package testhelm

import (
	"crypto/subtle"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"

	"sigs.k8s.io/yaml"

	"plumb.dev/pkg/testtls"

	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	repo "helm.sh/helm/v4/pkg/repo/v1"
)

// RepoOptions configure a Repo. Empty credentials mean anonymous access.
type RepoOptions struct {
	// Username and Password, when set, are required as HTTP basic auth on
	// every request (index and charts).
	Username string
	Password string
	// TLS serves HTTPS with a certificate for 127.0.0.1 signed by the
	// repository's own CA (see CA).
	TLS bool
	// ClientAuth (with TLS) requires a client certificate signed by the CA
	// (see ClientCert).
	ClientAuth bool
	// BaseURL, when set, is the base of the chart URLs in the index
	// (absolute URLs on another server); by default they are relative
	// ("<name>-<version>.tgz"), resolved against the repository URL.
	BaseURL string
}

// Repo is an HTTP chart repository on 127.0.0.1: GET /index.yaml and
// GET /<name>-<version>.tgz.
type Repo struct {
	opts RepoOptions
	srv  *httptest.Server
	ca   *testtls.Authority

	mu       sync.Mutex
	charts   map[string][]byte // file name -> .tgz
	index    *repo.IndexFile
	rawIndex []byte // served as index.yaml when set (SetIndex)
	requests map[string]int
}

// NewRepo starts an empty repository.
func NewRepo(opts RepoOptions) (*Repo, error) {
	r := &Repo{opts: opts, charts: map[string][]byte{}, index: repo.NewIndexFile(), requests: map[string]int{}}
	r.srv = httptest.NewUnstartedServer(http.HandlerFunc(r.serve))
	// Refused handshakes are what TLS tests are about, not noise for
	// stderr.
	r.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	if opts.TLS {
		ca, err := testtls.New("testhelm CA")
		if err != nil {
			return nil, err
		}
		r.ca = ca
		r.srv.TLS = ca.ServerConfig(opts.ClientAuth)
		r.srv.StartTLS()
	} else {
		r.srv.Start()
	}
	return r, nil
}

// URL returns http(s)://127.0.0.1:<port>.
func (r *Repo) URL() string { return r.srv.URL }

// CA returns the PEM of the CA that signed the server (and client)
// certificate; nil without TLS.
func (r *Repo) CA() []byte {
	if r.ca == nil {
		return nil
	}
	return r.ca.CA
}

// ClientCert returns the PEM certificate and key of a client certificate
// the repository accepts with ClientAuth; nil without TLS.
func (r *Repo) ClientCert() (certPEM, keyPEM []byte) {
	if r.ca == nil {
		return nil, nil
	}
	return r.ca.ClientCert, r.ca.ClientKey
}

// Close stops the server.
func (r *Repo) Close() { r.srv.Close() }

// Add packages the chart and serves it, adding it to the index.
func (r *Repo) Add(c Chart) error {
	tgz, err := Package(c)
	if err != nil {
		return err
	}
	return r.AddArchive(tgz)
}

// AddArchive serves a packaged chart, adding it to the index (its metadata
// read back by the SDK's loader). A chart of the same name and version is
// replaced.
func (r *Repo) AddArchive(tgz []byte) error {
	ch, err := loader.LoadArchive(strings.NewReader(string(tgz)))
	if err != nil {
		return fmt.Errorf("load archive: %w", err)
	}
	digest, err := digestOf(tgz)
	if err != nil {
		return err
	}
	name := filename(ch.Name(), ch.Metadata.Version)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.charts[name] = tgz
	index := repo.NewIndexFile()
	for _, vs := range r.index.Entries {
		for _, v := range vs {
			if v.Name != ch.Name() || v.Version != ch.Metadata.Version {
				index.Entries[v.Name] = append(index.Entries[v.Name], v)
			}
		}
	}
	md := *ch.Metadata
	if err := index.MustAdd(&md, name, r.opts.BaseURL, digest); err != nil {
		return err
	}
	index.SortEntries()
	r.index = index
	return nil
}

// Remove stops serving a chart version and drops it from the index.
func (r *Repo) Remove(name, version string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.charts, filename(name, version))
	vs := r.index.Entries[name]
	var kept repo.ChartVersions
	for _, v := range vs {
		if v.Version != version {
			kept = append(kept, v)
		}
	}
	r.index.Entries[name] = kept
	if len(kept) == 0 {
		delete(r.index.Entries, name)
	}
}

// Index returns the index.yaml the repository serves.
func (r *Repo) Index() ([]byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.indexLocked()
}

func (r *Repo) indexLocked() ([]byte, error) {
	if r.rawIndex != nil {
		return r.rawIndex, nil
	}
	return yaml.Marshal(r.index)
}

// SetIndex serves raw as index.yaml from now on, whatever was added (a
// broken index, a huge one); nil goes back to the generated index.
func (r *Repo) SetIndex(raw []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rawIndex = raw
}

// Requests returns how many requests for path ("/index.yaml",
// "/podinfo-1.0.0.tgz") were served, authorised or not.
func (r *Repo) Requests(path string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.requests[path]
}

// Metadata returns the chart metadata of an entry in the index, nil when
// absent.
func (r *Repo) Metadata(name, version string) *chart.Metadata {
	r.mu.Lock()
	defer r.mu.Unlock()
	cv, err := r.index.Get(name, version)
	if err != nil {
		return nil
	}
	return cv.Metadata
}

func (r *Repo) serve(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	r.requests[req.URL.Path]++
	r.mu.Unlock()
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if r.opts.Username != "" || r.opts.Password != "" {
		u, p, ok := req.BasicAuth()
		if !ok || subtle.ConstantTimeCompare([]byte(u), []byte(r.opts.Username)) != 1 ||
			subtle.ConstantTimeCompare([]byte(p), []byte(r.opts.Password)) != 1 {
			w.Header().Set("WWW-Authenticate", `Basic realm="testhelm"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	name := strings.TrimPrefix(req.URL.Path, "/")
	if name == "index.yaml" {
		b, err := r.indexLocked()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/x-yaml")
		_, _ = w.Write(b)
		return
	}
	tgz, ok := r.charts[name]
	if !ok {
		http.NotFound(w, req)
		return
	}
	w.Header().Set("Content-Type", "application/gzip")
	_, _ = w.Write(tgz)
}
