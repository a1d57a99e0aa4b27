// Package gitauth builds go-git's auth from the data of a Secret in the
// format of Flux's GitRepository secretRef, for every program that
// speaks Git with a user's credentials (source-controller's fetches,
// image-controller's pushes):
//
//   - http:// and https://: username and password (basic auth) or
//     bearerToken, and ca.crt, an extra CA bundle for HTTPS;
//   - ssh://: identity, a private key (password its passphrase), and
//     known_hosts, which is required: the server's host key must be
//     listed, an unknown or changed host key fails the connection. The
//     user is the URL's, else git.
//
// ProxyFromSecret reads a proxySecretRef (address, username, password);
// a proxy for an ssh:// URL is refused rather than ignored, so no
// connection silently goes around it.
//
// Errors are *Error, whose Kind tells a spec no retry fixes (Invalid)
// from credentials that are missing or unreadable (Auth).
package gitauth
