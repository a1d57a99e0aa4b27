// Package githubapp authenticates as a GitHub App, as Flux does, for the
// two controllers that talk to GitHub: source-controller (a GitRepository
// with spec.provider github clones with an installation token) and
// notification-controller (the github, githubdispatch and
// githubpullrequestcomment Providers write with one). The Secret holds the
// App's ID (githubAppID), the installation's ID (githubAppInstallationID),
// the App's RSA private key in PEM (githubAppPrivateKey) and, for GitHub
// Enterprise Server, the API's base URL (githubAppBaseURL, e.g.
// https://github.example.com/api/v3; default https://api.github.com).
//
// A token is minted by signing a JWT (RS256; iss the App ID, iat a minute
// in the past against clock skew, exp nine minutes ahead, under GitHub's
// ten) with the private key and POSTing it as a bearer token to
// /app/installations/{id}/access_tokens; the answer's token is then the
// password of HTTPS clones (user x-access-token) or an API bearer token.
// Tokens live an hour: a Tokens caches each until five minutes before it
// expires, keyed by the base URL, the IDs and the key, so a reconcile
// every minute does not call the API every minute, and a changed Secret
// mints a new one. Login names what the App writes ("<slug>[bot]", from
// GET /app), which a comment Provider needs to find its own comment: an
// installation token has no user behind GET /user.
//
// The base URL is a tenant's input: the API is called through the
// caller's HTTP client (its egress: the address policy, judged at dial
// time, its proxy and TLS) with the caller's context, and an answer is
// read to at most MaxResponseBytes. githubAppInstallationOwner (Flux looks
// the installation up by owner) is not supported: it is refused with a
// message asking for githubAppInstallationID.
//
// The JWT is golang-jwt's (a dependency of the Kubernetes libraries
// already); the two calls are plain net/http, as go-github would bring its
// own transport around the caller's.
package githubapp
