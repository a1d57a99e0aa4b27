package inspect

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"

	"plumb.dev/api/meta"
	"plumb.dev/pkg/fetch"
	"plumb.dev/pkg/object"
)

// MaxArtifactSize matches sync-controller's --max-artifact-size default:
// a rendered artifact larger than this is refused.
const MaxArtifactSize = 64 << 20

// ArtifactClient returns the HTTP client for artifact downloads: direct for
// URLs a laptop can reach, through the API server's service proxy (with
// cfg's identity) for an in-cluster Service host name, which only the
// cluster's DNS resolves.
func ArtifactClient(cfg *rest.Config) (*http.Client, error) {
	api, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	host, err := url.Parse(cfg.Host)
	if err != nil {
		return nil, fmt.Errorf("the API server URL %q: %w", cfg.Host, err)
	}
	if host.Scheme == "" {
		host, _ = url.Parse("https://" + cfg.Host)
	}
	return &http.Client{Transport: &serviceProxy{api: api.Transport, apiURL: host, direct: http.DefaultTransport}}, nil
}

// FetchRendered downloads a rendered artifact with hc (see ArtifactClient),
// verifies its digest, and decodes its objects.
func FetchRendered(ctx context.Context, hc *http.Client, a *meta.Artifact) ([]*unstructured.Unstructured, error) {
	data, err := fetch.Bytes(ctx, a.URL, a.Digest, fetch.Options{Client: hc, MaxSize: MaxArtifactSize})
	if err != nil {
		return nil, fmt.Errorf("downloading the rendered artifact: %w", err)
	}
	return object.DecodeManifests(data)
}

// serviceProxy rewrites requests for http://<svc>.<ns>.svc[.cluster.local]
// to the API server's /api/v1/namespaces/<ns>/services/http:<svc>:<port>/proxy.
type serviceProxy struct {
	api    http.RoundTripper
	apiURL *url.URL
	direct http.RoundTripper
}

func (p *serviceProxy) RoundTrip(req *http.Request) (*http.Response, error) {
	svc, ns, ok := InClusterService(req.URL.Hostname())
	if !ok {
		return p.direct.RoundTrip(req)
	}
	port := req.URL.Port()
	if port == "" {
		port = "80"
	}
	u := *p.apiURL
	u.Path = path.Join(p.apiURL.Path, "/api/v1/namespaces", ns, "services", "http:"+svc+":"+port, "proxy", req.URL.Path)
	u.RawQuery = req.URL.RawQuery
	out := req.Clone(req.Context())
	out.URL = &u
	out.Host = u.Host
	return p.api.RoundTrip(out)
}

// InClusterService splits <svc>.<ns>.svc or <svc>.<ns>.svc.cluster.local.
func InClusterService(host string) (svc, ns string, ok bool) {
	host = strings.TrimSuffix(host, ".")
	parts := strings.Split(host, ".")
	if len(parts) < 3 || parts[2] != "svc" {
		return "", "", false
	}
	if rest := strings.Join(parts[3:], "."); rest != "" && rest != "cluster.local" {
		return "", "", false
	}
	// Service and namespace names are DNS labels; anything else is not a
	// Service name and must not be spliced into the proxy path.
	if len(validation.IsDNS1123Label(parts[0])) > 0 || len(validation.IsDNS1123Label(parts[1])) > 0 {
		return "", "", false
	}
	return parts[0], parts[1], true
}
