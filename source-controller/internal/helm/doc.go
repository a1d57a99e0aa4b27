// Package helm is source-controller's use of the Helm SDK
// (helm.sh/helm/v4): fetching a repository's index.yaml and chart archives
// over HTTP (the SDK getter's request, with redirect and client
// certificate rules it cannot take), listing tags of an OCI registry with
// oras under bounds and pulling charts with the SDK's registry client,
// loading charts with its loader once CheckArchive passed their headers,
// resolving their dependencies, merging values files and packaging the
// result with chartutil.Save into deterministic bytes.
//
// Everything read from a repository is bounded: every HTTP connection the
// getter or the registry client opens may read at most Limits.MaxBytes
// (plus room for headers) before it fails with ErrTooLarge, every request
// is bounded in time by the caller's timeout, and charts are loaded with
// the SDK loader's decompressed-size budget
// (archive.MaxDecompressedChartSize, set by source-controller's
// --helm-chart-max-extracted-size; names, headers and entry count counted
// by CheckArchive), and a chart's dependencies are bounded in count and in
// total size. Redirects stay on the host that answered and never go from
// https to http; basic auth goes only to the repository's own scheme and
// host, and the TLS client certificate only to its host, unless
// passCredentials is set,
// and the registry client never reads a credentials file or Docker's
// configuration: it is given the Secret's credentials, or none. Every
// connection, the token realm's of a registry included, goes where the
// caller's address policy allows (Fetcher.Addresses, NewRegistry), and an
// error answer's body reaches the SDK and oras as its excerpt
// (source-controller/internal/egress).
package helm
