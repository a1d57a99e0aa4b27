package server

import (
	"net/http"

	"plumb.dev/ui/internal/access"
	"plumb.dev/ui/internal/actions"
	"plumb.dev/ui/internal/httpapi"
	"plumb.dev/ui/internal/live"
	"plumb.dev/ui/internal/overview"
	"plumb.dev/ui/internal/workloads"
)

// routes registers every route of the server, in one place.
func (s *Server) routes() http.Handler {
	// /api/: everything but signing in needs a session.
	api := http.NewServeMux()
	ov := &overview.Handler{Store: s.store}
	api.HandleFunc("GET /api/overview", ov.Overview)
	api.HandleFunc("GET /api/namespaces", ov.Namespaces)
	api.HandleFunc("POST /api/objects/{kind}/{namespace}/{name}/reconcile", actions.Reconcile)
	api.HandleFunc("POST /api/objects/{kind}/{namespace}/{name}/suspend", actions.Suspend)
	api.HandleFunc("POST /api/objects/{kind}/{namespace}/{name}/resume", actions.Resume)
	api.HandleFunc("POST /api/objects/{kind}/{namespace}/{name}/sync", actions.Sync)
	api.HandleFunc("POST /api/objects/{kind}/{namespace}/{name}/rollback", actions.Rollback)
	workloads.Routes(api)
	api.Handle("GET /api/live", &live.Handler{Hub: s.hub})
	api.HandleFunc("POST /api/logout", s.gate.Logout)
	api.HandleFunc("GET /api/session", s.gate.Session)
	for _, p := range s.parts {
		if p.Routes != nil {
			p.Routes(api, s.gate)
		}
	}
	api.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		httpapi.Error(w, http.StatusNotFound, "no route %s %s", r.Method, r.URL.Path)
	})

	root := http.NewServeMux()
	// For the Deployment's probes: answered once New has filled the cache.
	root.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		httpapi.JSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	root.HandleFunc("POST /api/login", s.gate.Login)
	root.Handle("/api/", s.gate.Protect(api))
	var app http.Handler = http.NotFoundHandler()
	for _, p := range s.parts {
		if p.Root != nil {
			app = p.Root
		}
	}
	root.Handle("/", app)

	var h http.Handler = root
	if s.opts.Auth == AuthKubeconfig {
		h = access.LocalHostOnly(s.port(), h)
	}
	return secureHeaders(h)
}

// secureHeaders sets on every answer the headers that keep the browser
// from guessing types, framing the UI into another site, or sending its
// address (with a login secret) elsewhere; the front end loads nothing
// but its own files.
func secureHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("Referrer-Policy", "no-referrer")
		hd.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'")
		h.ServeHTTP(w, r)
	})
}
