package server

import (
	"context"
	"net/http"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"

	"plumb.dev/ui/internal/access"
	"plumb.dev/ui/internal/live"
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

// builtinParts are the parts every server has, in order. At merge, each
// package adds its entry here; with the packages' APIs as they stand:
//
//	// ui/internal/inspect: the object pages, with the user's client.
//	func(Env) (Part, error) {
//		return Part{Routes: func(mux *http.ServeMux, a access.Access) {
//			inspect.Routes(mux, func(r *http.Request) (client.Client, *rest.Config, error) {
//				s := a.From(r)
//				return s.Client(), s.Config(), nil
//			})
//		}}, nil
//	},
//	// ui/internal/stream: the event history, the drift timeline and
//	// their changes (stream.Change = live.Change, or a conversion).
//	func(env Env) (Part, error) {
//		x, err := stream.Start(env.Context, stream.Config{NATS: env.Options.NATS, Log: env.Log})
//		if err != nil {
//			return Part{}, err
//		}
//		return Part{Routes: func(mux *http.ServeMux, a access.Access) { x.Routes(mux, byKind{a}) },
//			Changes: x, Close: x.Close}, nil
//	},
//	// ui/internal/web: the single-page app at "/".
//	func(Env) (Part, error) { return Part{Root: web.Handler()}, nil },
//
// where byKind's MayGet(r, kind, namespace, name) is
// a.From(r).MayGetObject(r.Context(), kind, namespace, name).
var builtinParts = []PartBuilder{}
