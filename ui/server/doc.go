// Package server is Plumb's web UI server: the `ui` program runs it, and so
// does `plumb ui` (in-process, kubeconfig mode) and the e2e tests.
// docs/design/ui.md is the contract: routes, JSON shapes, identity modes.
//
//	srv, err := server.New(ctx, server.Options{Auth: server.AuthKubeconfig, Config: cfg})
//	fmt.Println(srv.LoginURL()) // http://127.0.0.1:9080/#/?login=…
//	err = srv.Run(ctx)
//
// New listens, starts the watch of the overview's kinds (kinds.All) (with Options.Config,
// the server's identity) and returns once it has listed them; Run serves
// until its context ends. Handler is the whole HTTP handler, for tests
// that serve it themselves (httptest.NewServer): give no Listen then, so
// New opens no socket, and call Close when done. In kubeconfig mode the
// Host check then accepts 127.0.0.1 and localhost at any port.
//
// # Routes
//
// One place registers them all (routes.go). GET /healthz answers without
// a session, for probes. The sign-in routes (POST
// /api/login, POST /api/logout, GET /api/session) are access.Gate's;
// every other /api/ route is served only with a session, in the request's
// context (access.From), and a write only with the session's X-Plumb-CSRF
// header. This package's own routes: GET /api/overview, GET
// /api/namespaces (package overview), POST /api/objects/{kind}/{ns}/{name}/
// reconcile, /suspend, /resume, /rollback (package actions) and GET /api/live
// (package live).
//
// # Parts: where the other packages plug in
//
// The object pages (package inspect), the event stream and drift timeline
// (package stream) and the web app (package web) are Parts, built in
// parts.go (the one line each adds at merge) or given in Options.Parts. A
// PartBuilder gets an Env — the server's context, options, rest.Config,
// scheme, REST mapper, logger and the access.Access of the requests — and
// returns a Part with any of:
//
//   - Routes func(mux *http.ServeMux, a access.Access): registers /api/
//     routes on the protected mux (Go 1.22 patterns: "GET
//     /api/objects/{kind}/{namespace}/{name}"); a handler reads
//     a.From(r) (or access.From(r)) for the user's Session: Client() and
//     Config() act as the user, MayDo(ctx, verb, group, resource,
//     namespace, name) is a cached SelfSubjectAccessReview, MayGet(ctx,
//     group, resource, namespace, name) the check for showing one object,
//     MayGetObject(ctx, kind, namespace, name) the same by Kind name (an
//     event's involved object: "Kustomization"). Bodies are
//     already cut at 1 MiB; answer with package httpapi (JSON, Error,
//     APIError, which keeps the API server's status).
//   - Changes live.ChangeSource: further changes for GET /api/live (the
//     stream's events), filtered per user like the watch's
//     (MayGetObject: a change of a kind package kinds does not know is not
//     sent).
//   - Root http.Handler: everything outside /api/ (the embedded web app).
//     Without one, "/" answers 404.
//   - Close func(): called when Run returns.
package server
