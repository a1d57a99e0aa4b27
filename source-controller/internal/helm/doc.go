// Package helm is source-controller's use of the Helm SDK
// (helm.sh/helm/v4): fetching a repository's index.yaml and chart archives
// with the SDK's HTTP getter, listing and pulling charts from an OCI
// registry with its registry client, loading charts with its loader,
// resolving their dependencies, merging values files and packaging the
// result with chartutil.Save into deterministic bytes.
//
// Everything read from a repository is bounded: every HTTP connection the
// getter or the registry client opens may read at most Limits.MaxBytes
// (plus room for headers) before it fails with ErrTooLarge, every request
// is bounded in time by the caller's timeout, and charts are loaded with
// the SDK loader's decompressed-size budget
// (archive.MaxDecompressedChartSize, set by source-controller's
// --helm-chart-max-extracted-size). Credentials go only to the repository's
// own scheme and host (the getter's rule) unless passCredentials is set,
// and the registry client never reads a credentials file or Docker's
// configuration: it is given the Secret's credentials, or none.
package helm
