// Package access is who the UI's user is and what they may do. No request
// to /api/ but signing in is served without a session, and every read or
// write a handler makes for a user is made with that user's identity, so
// the API server, not the UI, decides what the user sees (docs/design/ui.md,
// "Identity").
//
// Two modes:
//
//   - kubeconfig (`plumb ui`): the user's own kubeconfig. The server listens
//     on loopback; a one-time secret in the URL it prints is traded for a
//     session (POST /api/login {"secret"}), and the Host header must name
//     127.0.0.1 or localhost at the server's port (LocalHostOnly), so a
//     page of another site that resolves its name to 127.0.0.1 (DNS
//     rebinding) is refused.
//   - token (the `ui` Deployment): POST /api/login {"token"} with a
//     Kubernetes bearer token, checked with a SelfSubjectReview made with
//     that token. The token stays in the server's memory under a random
//     session id; the browser holds only that id, in an HttpOnly,
//     SameSite=Strict cookie (Secure unless --insecure-cookies). The user's
//     rest.Config is the server's host and CA with the user's token and no
//     other credential.
//
// A Session carries the user's client and config and answers "may this
// user do that?" with a SelfSubjectAccessReview made as the user, cached
// for a minute (MayDo; MayGet asks of the namespace first, then of the
// object, so a stream of events costs a review per namespace). Gate.Protect puts the Session in the request's
// context (From), refuses a request without one (401) and any request,
// reads too, without the X-Plumb-CSRF value of its session (403; a GET may
// carry it as ?csrf=, for EventSource): the cookie alone, which a browser
// sends by itself to every port of the host, is not enough to read or
// change anything.
//
// Bounds, so that one token cannot exhaust the server: sign-ins are
// rate-limited per client address, and per browser for one that signed
// in here before (its device cookie, device.go), so a script behind a
// shared address cannot lock out the users who come through it; a user has at most MaxSessionsPerUser
// sessions (a further sign-in ends the oldest), the server maxSessions;
// the reviews cached by all sessions together are at most
// MaxCachedReviews. A Secure cookie is named with the __Host- prefix.
package access
