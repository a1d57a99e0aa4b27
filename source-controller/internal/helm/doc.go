// Package helm is source-controller's network side of the Helm SDK
// (helm.sh/helm/v4): fetching a repository's index.yaml and chart archives
// over HTTP (the SDK getter's request, with redirect and client
// certificate rules it cannot take), listing tags of an OCI registry with
// oras under bounds and pulling charts with the SDK's registry client, and
// resolving a dependency's version against an index or tags
// (Repository.Fetch). It returns chart archives as bytes and never loads
// one: loading, completing with dependencies, merging values files and
// packaging are pkg/helmpackage's, run in a chart worker process with
// hard limits (pkg/renderworker), since a chart's YAML may be crafted to
// cost gigabytes once parsed.
//
// Everything read from a repository is bounded: every HTTP connection the
// getter or the registry client opens may read at most Limits.MaxBytes
// (plus room for headers) before it fails with ErrTooLarge, every request
// is bounded in time by the caller's timeout, and a downloaded archive is
// checked against its index entry's digest. Redirects stay on the host
// that answered and never go from https to http; basic auth goes only to
// the repository's own scheme and host, and the TLS client certificate
// only to its host, unless passCredentials is set, and the registry
// client never reads a credentials file or Docker's
// configuration: it is given the Secret's credentials, or none. Every
// connection, the token realm's of a registry included, goes where the
// caller's address policy allows (Fetcher.Addresses, NewRegistry), and an
// error answer's body reaches the SDK and oras as its excerpt
// (source-controller/internal/egress).
package helm
