package server

import (
	"context"
	"errors"
	"net/http"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	pkginspect "plumb.dev/pkg/inspect"
	"plumb.dev/ui/internal/access"
	"plumb.dev/ui/internal/inspect"
	"plumb.dev/ui/internal/kinds"
	"plumb.dev/ui/internal/live"
	"plumb.dev/ui/internal/stream"
	"plumb.dev/ui/internal/web"
)

// Part is one package's share of the server (see the package doc).
type Part struct {
	// Routes registers routes on the mux of /api/, served behind the
	// session check.
	Routes func(mux *http.ServeMux, a access.Access)
	// Changes are further changes pushed to GET /api/live.
	Changes live.ChangeSource
	// Root serves everything outside /api/.
	Root http.Handler
	// Close releases what the part holds (a NATS connection).
	Close func()
}

// Env is what a part is built from.
type Env struct {
	// Context ends when the server stops.
	Context context.Context
	Options Options
	// Config is the server's own identity (Options.Config).
	Config *rest.Config
	Scheme *runtime.Scheme
	Mapper meta.RESTMapper
	Access access.Access
	Log    logr.Logger
}

// PartBuilder builds one part.
type PartBuilder func(env Env) (Part, error)

// builtinParts are the parts every server has, in order: the object
// pages, the event stream, and the single-page app.
var builtinParts = []PartBuilder{inspectPart, streamPart, webPart}

// inspectPart serves the object pages with the user's client. Rendered
// artifacts come only from render-controller's Service in
// --controller-namespace, through the API server's service proxy; or from
// a render-controller on this machine: the one Options.LocalRenderController
// names, or, in kubeconfig mode (one user, on loopback, as that user), any
// loopback address, as `plumb diff` does.
func inspectPart(env Env) (Part, error) {
	renders := pkginspect.RenderControllerIn(env.Options.ControllerNamespace)
	renders.LocalAddr = env.Options.LocalRenderController
	renders.Loopback = env.Options.Auth == AuthKubeconfig
	opts := inspect.Options{RenderController: renders, Log: env.Log.WithName("inspect")}
	return Part{Routes: func(mux *http.ServeMux, a access.Access) {
		inspect.Routes(mux, func(r *http.Request) (client.Client, *rest.Config, error) {
			s := a.From(r)
			if s == nil {
				return nil, nil, errors.New("no session")
			}
			return s.Client(), s.Config(), nil
		}, opts)
	}}, nil
}

// streamPart serves the event history and the drift timeline, and pushes
// each new event's object to /api/live.
func streamPart(env Env) (Part, error) {
	x, err := stream.Start(env.Context, stream.Config{NATS: env.Options.NATS,
		MaxEvents: env.Options.MaxEvents, MaxBytes: env.Options.MaxEventBytes, Log: env.Log.WithName("stream")})
	if err != nil {
		return Part{}, err
	}
	discovered, err := kinds.NewDiscovered(env.Config)
	if err != nil {
		x.Close()
		return Part{}, err
	}
	return Part{Routes: func(mux *http.ServeMux, a access.Access) { x.Routes(mux, streamAccess{a, discovered}) },
		Changes: x, Close: x.Close}, nil
}

// streamAccess shows a user the events of the objects that user may get,
// and a drift change's values only for an applied object they may get.
type streamAccess struct {
	access access.Access
	kinds  *kinds.Discovered
}

func (s streamAccess) MayGet(r *http.Request, kind, namespace, name string) bool {
	sess := s.access.From(r)
	return sess != nil && sess.MayGetObject(r.Context(), kind, namespace, name)
}

func (s streamAccess) MayGetAll(r *http.Request, kind, namespace string) bool {
	sess := s.access.From(r)
	k, ok := kinds.LookupAny(kind)
	return sess != nil && ok && sess.MayDo(r.Context(), "get", k.Group(), k.Resource, namespace, "")
}

// MayGetApplied resolves the Kind through discovery (Plumb's own kinds
// through package kinds) and asks of every resource that serves it with
// the object's scope: a Kind two groups serve is shown only when the user
// may get both, as the change does not say which it is.
func (s streamAccess) MayGetApplied(r *http.Request, kind, namespace, name string) bool {
	sess := s.access.From(r)
	if sess == nil {
		return false
	}
	if k, ok := kinds.LookupAny(kind); ok {
		return sess.MayGet(r.Context(), k.Group(), k.Resource, namespace, name)
	}
	found := false
	for _, res := range s.kinds.Resources(kind) {
		if res.Namespaced != (namespace != "") {
			continue
		}
		if !sess.MayGet(r.Context(), res.Group, res.Resource, namespace, name) {
			return false
		}
		found = true
	}
	return found
}

// webPart serves the single-page app outside /api/.
func webPart(Env) (Part, error) { return Part{Root: web.Handler()}, nil }
