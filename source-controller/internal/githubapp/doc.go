// Package githubapp mints GitHub App installation tokens for a
// GitRepository with spec.provider github, as Flux does: the Secret of
// spec.secretRef holds the App's ID (githubAppID), the installation's ID
// (githubAppInstallationID), the App's RSA private key in PEM
// (githubAppPrivateKey) and, for GitHub Enterprise Server, the API's base
// URL (githubAppBaseURL, e.g. https://github.example.com/api/v3; default
// https://api.github.com).
//
// A token is minted by signing a JWT (RS256; iss the App ID, iat a minute
// in the past against clock skew, exp nine minutes ahead, under GitHub's
// ten) with the private key and POSTing it as a bearer token to
// /app/installations/{id}/access_tokens; the answer's token is then the
// password of HTTPS clones (user x-access-token). Tokens live an hour: a
// Tokens caches each until five minutes before it expires, keyed by the
// base URL, the IDs and the key, so a reconcile every minute does not call
// the API every minute, and a changed Secret mints a new one.
//
// The base URL is a tenant's input: the API is called through
// source-controller's egress transport (the address policy, judged at
// dial time, redirects included) with the reconcile's context, and its
// answer is read to at most MaxResponseBytes. githubAppInstallationOwner
// (Flux looks the installation up by owner) is not supported: it is
// refused with a message asking for githubAppInstallationID.
package githubapp
