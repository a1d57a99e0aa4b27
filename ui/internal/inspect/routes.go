package inspect

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"plumb.dev/pkg/inspect"
	"plumb.dev/ui/internal/httpapi"
	"plumb.dev/ui/internal/kinds"
)

// ClientFunc returns the client and REST config of the user behind r: the
// identity every request of a page is made with. The server adapts its
// session to it; an error ends the request with 401.
type ClientFunc func(r *http.Request) (client.Client, *rest.Config, error)

// maxBody bounds a request body.
const maxBody = 1 << 20

// requestTimeout bounds the API requests and downloads one page makes.
const requestTimeout = 30 * time.Second

// Options configure the object pages.
type Options struct {
	// RenderController is the one place rendered artifacts are downloaded
	// from (the URLs in statuses are anyone's who may write them).
	RenderController inspect.RenderController
	// Log receives why an artifact could not be downloaded, which the
	// pages do not say.
	Log logr.Logger
}

// Routes registers the object pages on mux (Go 1.22 patterns):
//
//	GET  /api/objects/{kind}/{namespace}/{name}
//	GET  /api/objects/{kind}/{namespace}/{name}/live?id=
//	GET  /api/objects/{kind}/{namespace}/{name}/revisions?from=&to=
//	POST /api/objects/{kind}/{namespace}/{name}/ignore
//
// Writes are expected behind the server's CSRF check.
func Routes(mux *http.ServeMux, clients ClientFunc, opts Options) {
	if opts.Log.GetSink() == nil {
		opts.Log = logr.Discard()
	}
	h := &handlers{clients: clients, opts: opts}
	mux.HandleFunc("GET /api/objects/{kind}/{namespace}/{name}", h.serve(h.object))
	mux.HandleFunc("GET /api/objects/{kind}/{namespace}/{name}/live", h.serve(h.live))
	mux.HandleFunc("GET /api/objects/{kind}/{namespace}/{name}/revisions", h.serve(h.revisions))
	mux.HandleFunc("POST /api/objects/{kind}/{namespace}/{name}/ignore", h.serve(h.ignore))
}

type handlers struct {
	clients ClientFunc
	opts    Options
}

// request is one page request: the object it names, read with the
// user's identity.
type request struct {
	*http.Request
	kind   kinds.Kind
	obj    client.Object
	client client.Client
	config *rest.Config
	opts   Options
}

// artifactClient downloads rendered artifacts with the user's identity,
// from the configured render-controller only; its errors say nothing of
// what answered (the server's log does).
func (r *request) artifactClient() (*inspect.ArtifactFetcher, error) {
	return inspect.NewArtifactFetcher(r.config, r.opts.RenderController,
		inspect.ArtifactFetcherOptions{GenericErrors: true, Log: r.opts.Log})
}

// httpError is an error with the status it is answered with.
type httpError struct {
	status int
	err    error
}

func (e *httpError) Error() string { return e.err.Error() }
func (e *httpError) Unwrap() error { return e.err }

// badRequest is a 400 error.
func badRequest(format string, args ...any) error {
	return &httpError{status: http.StatusBadRequest, err: fmt.Errorf(format, args...)}
}

// notFound is a 404 error.
func notFound(format string, args ...any) error {
	return &httpError{status: http.StatusNotFound, err: fmt.Errorf(format, args...)}
}

// serve reads the object the route names with the user's identity, runs
// page, and writes its answer or its error as JSON.
func (h *handlers) serve(page func(*request) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, maxBody)
		ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
		defer cancel()
		out, err := h.run(r.WithContext(ctx), page)
		if err != nil {
			writeError(w, err)
			return
		}
		httpapi.JSON(w, http.StatusOK, out)
	}
}

func (h *handlers) run(r *http.Request, page func(*request) (any, error)) (any, error) {
	// Routes name kinds by their lower-case singular name only.
	k, ok := kinds.Lookup(r.PathValue("kind"))
	if !ok || k.Route() != r.PathValue("kind") {
		return nil, notFound("unknown kind %q: a lower-case kind of the overview (gitrepository, kustomization, imagepolicy, …)", r.PathValue("kind"))
	}
	ns, name := r.PathValue("namespace"), r.PathValue("name")
	if len(validation.IsDNS1123Label(ns)) > 0 {
		return nil, badRequest("namespace %q is not a DNS label", ns)
	}
	if len(validation.IsDNS1123Subdomain(name)) > 0 {
		return nil, badRequest("name %q is not a DNS subdomain", name)
	}
	c, cfg, err := h.clients(r)
	if err != nil {
		return nil, &httpError{status: http.StatusUnauthorized, err: err}
	}
	obj := k.New()
	if err := c.Get(r.Context(), client.ObjectKey{Namespace: ns, Name: name}, obj); err != nil {
		return nil, err
	}
	return page(&request{Request: r, kind: k, obj: obj, client: c, config: cfg, opts: h.opts})
}

// writeError answers {"error": "..."} with the API server's status for
// its errors, 400 for a bad request, 500 otherwise.
func writeError(w http.ResponseWriter, err error) {
	status := http.StatusInternalServerError
	var he *httpError
	var tooBig *http.MaxBytesError
	var apiStatus apierrors.APIStatus
	switch {
	case errors.As(err, &he):
		status = he.status
	case errors.As(err, &tooBig):
		status = http.StatusRequestEntityTooLarge
	case errors.As(err, &apiStatus) && apiStatus.Status().Code != 0:
		status = int(apiStatus.Status().Code)
	}
	httpapi.JSON(w, status, httpapi.ErrorBody{Error: err.Error()})
}
