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
// package adds its line here, for example:
//
//	func(env Env) (Part, error) { return Part{Routes: inspect.Routes}, nil },
//	stream.Part, // func(Env) (Part, error): NATS from env.Options.NATS
//	func(env Env) (Part, error) { return Part{Root: web.Handler()}, nil },
var builtinParts = []PartBuilder{}
