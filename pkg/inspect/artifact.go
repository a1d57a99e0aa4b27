package inspect

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"

	"plumb.dev/api/meta"
	"plumb.dev/pkg/artifact"
	"plumb.dev/pkg/fetch"
	"plumb.dev/pkg/object"
)

// MaxArtifactSize is the largest rendered artifact downloaded: the most
// render-controller writes (--max-rendered-size's default), so every
// render it serves can be looked at and nothing larger is buffered.
const MaxArtifactSize = artifact.DefaultMaxRenderedBytes

// maxDownloads is how many rendered artifacts the process downloads and
// decodes at a time: each is up to MaxArtifactSize buffered plus its
// decoded objects, and a UI pod serving many pages must not hold dozens.
const maxDownloads = 2

// downloads is the process-wide semaphore of artifact downloads.
var downloads = make(chan struct{}, maxDownloads)

// ErrArtifactRefused is an artifact URL that does not name a file of the
// configured render-controller: no request is made for it.
var ErrArtifactRefused = errors.New("the artifact URL is not one of render-controller's rendered artifacts")

// RenderController is where rendered artifacts may be downloaded from;
// an artifact URL in a status is hostile (anyone who may write the status
// sets it), so nothing else is ever asked.
type RenderController struct {
	// Namespace, Service and Port name its Service, reached through the
	// API server's service proxy with the caller's identity (the host
	// name <Service>.<Namespace>.svc[.cluster.local] that only the
	// cluster's DNS resolves).
	Namespace, Service string
	Port               int
	// LocalAddr is the host:port of a render-controller running on this
	// machine (its --storage-adv-addr, as e2e/localenv and `make run`
	// start it), downloaded from directly without credentials. Empty in a
	// cluster.
	LocalAddr string
	// Loopback allows direct downloads from any loopback address: for
	// the user's own processes (`plumb diff`, the UI in kubeconfig mode),
	// which may reach what the user reaches anyway.
	Loopback bool
}

// RenderControllerIn is render-controller's Service as deploy/ installs
// it, in namespace.
func RenderControllerIn(namespace string) RenderController {
	return RenderController{Namespace: namespace, Service: "render-controller", Port: 80}
}

// ArtifactFetcher downloads rendered artifacts from one render-controller
// (see NewArtifactFetcher).
type ArtifactFetcher struct {
	from RenderController
	hc   *http.Client
	// generic hides why a download failed behind one message (the detail
	// goes to log): for answers shown to someone other than the process's
	// own user.
	generic bool
	log     logr.Logger
}

// ArtifactFetcherOptions are the optional parts of an ArtifactFetcher.
type ArtifactFetcherOptions struct {
	// GenericErrors makes FetchRendered's errors say only that the
	// artifact could not be downloaded; the cause is logged to Log. The
	// UI sets it: an upstream status, a connection error or a digest of
	// what answered is a port scanner's output.
	GenericErrors bool
	Log           logr.Logger
}

// NewArtifactFetcher returns a fetcher of from's artifacts: through the
// API server's service proxy with cfg's identity for from's Service, or
// directly as from allows for a local one. Redirects are refused.
func NewArtifactFetcher(cfg *rest.Config, from RenderController, opts ArtifactFetcherOptions) (*ArtifactFetcher, error) {
	if len(validation.IsDNS1123Label(from.Namespace)) > 0 || len(validation.IsDNS1123Label(from.Service)) > 0 || from.Port < 1 || from.Port > 65535 {
		return nil, fmt.Errorf("render-controller's Service %s/%s:%d is not a Service name and port", from.Namespace, from.Service, from.Port)
	}
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
	log := opts.Log
	if log.GetSink() == nil {
		log = logr.Discard()
	}
	apiTransport := api.Transport
	if apiTransport == nil {
		// rest.HTTPClientFor gives http.DefaultClient, whose Transport
		// is nil, for a config with nothing of its own to add.
		apiTransport = http.DefaultTransport
	}
	t := &artifactTransport{from: from, api: apiTransport, apiURL: host, direct: http.DefaultTransport}
	return &ArtifactFetcher{from: from, generic: opts.GenericErrors, log: log, hc: &http.Client{
		Transport: t,
		// A redirect would be followed with the caller's identity to
		// wherever render-controller's stand-in points.
		CheckRedirect: func(*http.Request, []*http.Request) error { return ErrArtifactRefused },
	}}, nil
}

// ArtifactError is a download that failed. Its message is generic when
// the fetcher hides causes; Unwrap still gives the cause (a 404 says the
// render is no longer served).
type ArtifactError struct {
	generic bool
	cause   error
}

func (e *ArtifactError) Error() string {
	msg := "downloading the rendered artifact: " + e.cause.Error()
	if e.generic {
		msg = "the rendered artifact could not be downloaded from render-controller"
	}
	if e.Unreachable() {
		msg += "; " + unreachableHint
	}
	return msg
}

// unreachableHint is what a 502 or 503 of the service proxy most often
// means in a fenced install (deploy/README.md, "Network policies").
const unreachableHint = "the API server could not reach render-controller's Service: " +
	"where deploy/network-policies is enforced, render-controller-artifacts must admit the API server's addresses"

// Unreachable reports whether the API server answered that it could not
// reach render-controller (502 or 503 from its service proxy), rather
// than render-controller answering.
func (e *ArtifactError) Unreachable() bool {
	var status *fetch.StatusError
	return errors.As(e.cause, &status) && (status.Code == http.StatusBadGateway || status.Code == http.StatusServiceUnavailable)
}

func (e *ArtifactError) Unwrap() error { return e.cause }

// FetchRendered downloads a rendered artifact with f, verifies its
// digest, and decodes its objects. At most maxDownloads run in the
// process at a time; the others wait as long as ctx lets them.
func FetchRendered(ctx context.Context, f *ArtifactFetcher, a *meta.Artifact) ([]*unstructured.Unstructured, error) {
	objs, err := f.fetch(ctx, a)
	if err != nil {
		f.log.Info("rendered artifact not downloaded", "url", a.URL, "error", err.Error())
		return nil, &ArtifactError{generic: f.generic, cause: err}
	}
	return objs, nil
}

func (f *ArtifactFetcher) fetch(ctx context.Context, a *meta.Artifact) ([]*unstructured.Unstructured, error) {
	// Refused before any wait or retry; the transport checks again.
	u, err := url.Parse(a.URL)
	if err != nil {
		return nil, ErrArtifactRefused
	}
	if _, _, err := f.from.route(u); err != nil {
		return nil, err
	}
	select {
	case downloads <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-downloads }()
	data, err := fetch.Bytes(ctx, a.URL, a.Digest, fetch.Options{Client: f.hc, MaxSize: MaxArtifactSize})
	if err != nil {
		return nil, err
	}
	return object.DecodeManifests(data)
}

// renderedFile is the file name render-controller stores a render under:
// the hex of its digest (render-controller/internal/rendered, Store).
var renderedFile = regexp.MustCompile(`^[0-9a-f]{64}\.yaml$`)

// renderedKinds are the storage folders of rendered artifacts
// (artifact.Ref.Dir of a Kustomization or a HelmRelease).
var renderedKinds = map[string]bool{"kustomization": true, "helmrelease": true}

// artifactPath returns u's path when it is the path of a rendered
// artifact as render-controller serves it, /<kind>/<namespace>/<name>/<hex>.yaml,
// and nothing else: no dot segments, no escapes (no name render-controller
// writes needs one), no query, no user.
func artifactPath(u *url.URL) (string, bool) {
	if u.Opaque != "" || u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Scheme != "http" {
		return "", false
	}
	p := u.EscapedPath()
	if p != u.Path || strings.ContainsAny(p, `%\`) {
		return "", false
	}
	parts := strings.Split(p, "/")
	if len(parts) != 5 || parts[0] != "" {
		return "", false
	}
	for _, s := range parts[1:] {
		if s == "" || s == "." || s == ".." {
			return "", false
		}
	}
	if !renderedKinds[parts[1]] || len(validation.IsDNS1123Label(parts[2])) > 0 ||
		len(validation.IsDNS1123Subdomain(parts[3])) > 0 || !renderedFile.MatchString(parts[4]) {
		return "", false
	}
	return p, true
}

// route says how u is reached: through the service proxy (proxy true,
// with the API path below the proxy) or directly; ErrArtifactRefused when
// u is not one of r's artifacts.
func (r RenderController) route(u *url.URL) (apiPath string, proxy bool, err error) {
	p, ok := artifactPath(u)
	if !ok {
		return "", false, ErrArtifactRefused
	}
	if svc, ns, ok := InClusterService(u.Hostname()); ok {
		port := u.Port()
		if port == "" {
			port = "80"
		}
		if !r.serves(svc) || ns != r.Namespace || port != strconv.Itoa(r.Port) {
			return "", false, ErrArtifactRefused
		}
		return r.proxyPrefix(svc) + strings.TrimPrefix(p, "/"), true, nil
	}
	if r.LocalAddr != "" && u.Host == r.LocalAddr {
		return "", false, nil
	}
	if r.Loopback && isLoopback(u.Hostname()) {
		return "", false, nil
	}
	return "", false, ErrArtifactRefused
}

// serves reports whether svc is r's Service or a shard's of it: a shard's
// render-controller serves its renders behind <Service>-<shard> in the
// same namespace (deploy/components/sharding, docs/design/sharding.md).
func (r RenderController) serves(svc string) bool {
	shard, ok := strings.CutPrefix(svc, r.Service+"-")
	return svc == r.Service || ok && shard != ""
}

// proxyPrefix is the API path of the service proxy of svc (r's Service or
// a shard's) in r's namespace, ending in "/".
func (r RenderController) proxyPrefix(svc string) string {
	return "/api/v1/namespaces/" + r.Namespace + "/services/http:" + svc + ":" + strconv.Itoa(r.Port) + "/proxy/"
}

// isLoopback is localhost or a loopback IP address.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// artifactTransport sends each request to the API server's service proxy
// of render-controller's Service, or directly to a local render-controller,
// after RenderController.route allowed it; anything else is refused
// without a request.
type artifactTransport struct {
	from   RenderController
	api    http.RoundTripper
	apiURL *url.URL
	direct http.RoundTripper
}

func (t *artifactTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet {
		return nil, ErrArtifactRefused
	}
	apiPath, proxy, err := t.from.route(req.URL)
	if err != nil {
		return nil, err
	}
	if !proxy {
		out := req.Clone(req.Context())
		out.Header.Del("Authorization")
		return t.direct.RoundTrip(out)
	}
	base := strings.TrimSuffix(t.apiURL.Path, "/")
	full := base + apiPath
	// Built from checked parts; checked again, as the one thing that
	// must hold whatever changes above.
	svc, _, _ := InClusterService(req.URL.Hostname())
	if !t.from.serves(svc) || !strings.HasPrefix(full, base+t.from.proxyPrefix(svc)) || strings.Contains(full, "/../") || strings.Contains(full, "/./") {
		return nil, ErrArtifactRefused
	}
	u := *t.apiURL
	u.Path, u.RawPath, u.RawQuery, u.Fragment = full, "", "", ""
	out := req.Clone(req.Context())
	out.URL = &u
	out.Host = u.Host
	return t.api.RoundTrip(out)
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
