// Package helmstorage keeps a HelmRelease's releases in Helm's own
// storage format, as a record: one Secret per revision,
// sh.helm.release.v1.<release>.v<N> of type helm.sh/release.v1, labelled
// name, owner=helm, status and version, its data the release as
// base64(gzip(JSON)) — read by the Helm SDK's Secret driver
// (helm.sh/helm/v4/pkg/storage/driver) and written here in the driver's
// exact encoding (encode.go: the same bytes, from pooled compressors
// instead of a new 0.7 MB one per record), so the helm CLI, and Flux's
// helm-controller, read what Plumb writes and Plumb reads what they wrote.
//
// Plumb does not release through Helm: render-controller renders the
// chart, sync-controller applies the render. A record says what was
// released; it is written after the release (sync-controller's
// recordRelease), never read to decide what is applied. It is read for:
//
//   - adoption: the first release of a HelmRelease continues a release the
//     helm CLI or helm-controller made (Latest: its next version is the
//     newest record's plus one, and the deployed record is superseded);
//   - Read: one revision, for whoever needs a past release's manifest;
//   - MoveTo: every record copied, as it is, into another namespace
//     (spec.storageNamespace changed), then deleted here.
//
// Storage reaches the API server through a controller-runtime client (the
// sync's, which acts as the HelmRelease's ServiceAccount): the driver is
// given an adapter of the client (secrets), which also bounds what a
// record may decompress to (MaxDecodedBytes): a Secret in the storage
// namespace is input that anyone allowed to write Secrets there controls.
//
// Lists read only the labels (version and status), through Reader when
// it is set (the API server, where Client reads a cache); a record is
// decoded only to change its status or to Read it, and a move copies it
// without decoding it.
package helmstorage
