// Package controller holds the reconcilers of source-controller: a
// GitRepository becomes a verified tar.gz artifact, an HTTP HelmRepository
// a verified index.yaml, a HelmChart a packaged .tgz, an OCIRepository a
// checked tar.gz of one layer, a Bucket a tar.gz of its objects, an
// ArtifactGenerator ExternalArtifacts composed from the others' artifacts,
// all served over HTTP from the same storage.
//
// # Reconcile (GitRepository)
//
// A reconcile of a live, unsuspended object adds the finalizer
// source.plumb.dev/finalizer, reports Reconciling=True first when the
// generation is new, then runs these steps in order, stopping at the first
// error:
//
//  1. storage: re-verify the current artifact's sha256 (ArtifactInStorage);
//     a missing or tampered file is rebuilt by the next steps.
//  2. include (only with spec.include): read the artifacts of the included
//     GitRepositories of the namespace (IncludeUnavailable: IncludeNotFound,
//     NoIncludedArtifact, IncludeFailed for a cycle), so that the next step
//     knows whether they changed; a new artifact of an included one
//     reconciles its includers at once (a field index and a watch).
//  3. source: list the remote's references (ls-remote) and resolve
//     spec.ref; when the verified artifact of this generation already has
//     that revision, made with the current spec.ignore, spec.sparseCheckout,
//     spec.recurseSubmodules and included artifacts (status.observed*,
//     includedArtifacts), nothing is fetched; otherwise check the commit
//     out, shallow where the ref allows, only the spec.sparseCheckout
//     folders when set (a missing one is ReferenceNotFound), with its
//     submodules when spec.recurseSubmodules (same address policy, budget
//     and timeout; credentials only on spec.url's host), through the proxy of spec.proxySecretRef when
//     set (ProxyConfigError when it cannot be used) (FetchFailed on error). The checkout may
//     write at most --max-repository-size bytes (default 1 GiB), Git
//     objects and files together, counted while they are written
//     (internal/git); past it the fetch or checkout stops with
//     FetchFailed and Ready=False, reason RepositoryTooLarge, before
//     anything is packed. A revision refused under the current limit is
//     not fetched again. An https:// spec.url that the server redirects to
//     plain http:// is refused before any request goes there
//     (FetchFailed, Ready=False, reason InsecureConnectionsDisallowed);
//     an http:// spec.url sends the Secret's credentials in clear, as it
//     asks, exactly as Flux does (docs/design/tenancy.md, "Source
//     credentials").
//  4. verify (only with spec.verify): check the OpenPGP or SSH signature of the
//     commit just checked out (mode HEAD), of the annotated tag spec.ref
//     names (Tag), or both (TagAndHEAD), with the public keys of
//     spec.verify.secretRef (internal/git, bounded: 256 KiB, 100 keys).
//     SourceVerified=True names the keys' fingerprints; a refused revision
//     is SourceVerified=False and Ready=False (VerificationError,
//     InvalidGitObject, InvalidTagSignature, InvalidCommitSignature,
//     retried with backoff; InvalidVerificationMode, a tag mode without a
//     tag ref, stalled) and is never packed. With spec.verify the source
//     step's "nothing new" shortcut also needs SourceVerified=True for the
//     generation (docs/design/source-verification.md).
//  5. artifact: copy the included artifacts' fromPath folders to their
//     toPath in the checkout (read from this storage, digest-checked,
//     bounded by --max-repository-size together; IncludeFailed), pack the
//     checkout into gitrepository/<ns>/<name>/<commit>.tar.gz
//     (pkg/artifact), set status.artifact and the observed fields, emit
//     NewArtifact for a new revision, keep the newest
//     --artifact-retention-records files (docs/design/source.md).
//
// A panic in a step (they read a remote repository, untrusted input) fails
// that step like an error (pkg/panics), so the summary below reports it.
// Every failure message names spec.url without its user info
// (user:password@), in conditions, events and logs alike: internal/git's
// errors pass message.StripUserInfo.
//
// pkg/reconcile's skeleton then summarises, as its outcome table says
// (pkg/reconcile's documentation). What is this controller's to choose:
// a spec that cannot work (an invalid semver range) is a Stall; a
// revision over the size limit is a Stall (RepositoryTooLarge) polled
// every spec.interval, as only a new commit (or a higher limit) helps and
// retrying with backoff would download the same bytes again and again;
// the same, reason InsecureConnectionsDisallowed, for an https:// remote
// that redirects to http://; anything else is a Retry with
// controller-runtime's backoff (a GitRepository has no retryInterval).
// The previous artifact stays in status and in storage through failures.
// The status is server-side-applied with the field manager plumb-source
// when it changed. lastHandledReconcileAt records the value of
// reconcile.plumb.dev/requestedAt, whose change triggers a reconcile at
// once.
// Deleting the object removes its storage folder, then the finalizer.
//
// # HelmRepository
//
// The same skeleton, finalizer, field manager and requestedAt handling. A
// repository of type default runs the steps storage (re-verify the stored
// index, ArtifactInStorage), index (fetch <url>/index.yaml with the Helm
// SDK's HTTP getter: basic auth from spec.secretRef's username and
// password, TLS from spec.certSecretRef or else spec.secretRef's tls.crt,
// tls.key and ca.crt, every request bounded by spec.timeout and at most
// --helm-index-max-size bytes, default 10 MiB, counted on the connection
// as it is read; then parsed and verified by the SDK's index loader —
// FetchFailed with AuthenticationFailed or IndexationFailed; a plain
// http:// request on behalf of an https:// repository, a redirect or a
// chart URL, is refused before it is sent, InsecureConnectionsDisallowed,
// stalled and polled every spec.interval) and artifact
// (store the fetched bytes as helmrepository/<ns>/<name>/index-<sha256>.yaml,
// revision the index's sha256: digest, status.url its address, NewArtifact
// when the digest changes). A broken index, a refused request or an
// oversized one is Ready=False with an error event; the last good index
// stays in status and storage, so the HelmCharts built from it keep
// working. A repository of type oci has no artifact (one left from an
// earlier type is removed): its URL must name a registry and repository
// without tag or digest (InvalidSpec, stalled) and its Secrets must be
// usable (AuthenticationFailed); it is then Ready, as Flux's v1 OCI
// HelmRepository is. spec.insecure lets HelmCharts reach the registry
// over plain HTTP. It requeues after spec.interval.
//
// # HelmChart
//
// Steps storage (re-verify the stored chart), source, chart and artifact.
// source reads spec.sourceRef: an HTTP HelmRepository needs a stored index
// (the last good one serves while a newer index is broken), an OCI one
// Ready=True on its generation, a GitRepository an artifact, which is
// verified and extracted from this controller's own storage with
// pkg/artifact's bounded extraction; a missing or unready source is a
// wait (DependencyNotReady, no event), and HelmCharts are indexed by
// source so that a source's new artifact (or an OCI repository's change of
// Ready) brings them back at once. An invalid spec.version stalls.
//
// chart resolves and builds, with the network and the Kubernetes client
// here and everything that parses the chart's content in a chart worker
// (pkg/renderworker, pkg/helmpackage): a process of this program with a
// hard memory limit (--chart-worker-memory, 768 MiB), no network, at most
// --chart-workers (2) at once, each request bounded by the source's
// spec.timeout. A chart's YAML can be crafted to cost gigabytes once
// parsed (docs/design/render-sandbox.md); in a worker it costs that
// worker, which is stopped, and the HelmChart fails with LimitExceeded
// naming the limit, while every other HelmChart packages on. From an HTTP
// repository, spec.version (a
// semver range, "*" the newest stable version) is resolved against the
// stored index with the SDK's index types, and the archive fetched from
// the entry's URL resolved against the repository's, with the getter —
// basic auth goes only to the repository's scheme and host unless
// spec.passCredentials — and checked against the entry's digest. From an
// OCI repository the SDK's registry client lists the tags, resolves the
// range and pulls, given only the Secret's credentials (never a
// credentials file of the controller); with spec.verify the version's
// manifest digest is resolved and its signatures checked first as an
// OCIRepository's are (helmchart_verify.go: SourceVerified, and
// VerificationError or InvalidArtifactSignature without FetchFailed),
// and the chart pulled by that digest; spec.verify with any other source
// stalls (InvalidSpec). A chart worker loads the archive and checks it
// is spec.chart. From a GitRepository a chart worker loads
// the chart from spec.chart, a path that must stay inside the artifact;
// spec.version, when a range, must match its version. Either way the
// worker's plan lists the remote dependencies still needed. Downloads are
// at most --helm-chart-max-size bytes (default 10 MiB) within the
// repository's spec.timeout; the SDK loader refuses a chart whose files
// decompress beyond --helm-chart-max-extracted-size (default 100 MiB).
// When the stored artifact already is the resolved version for this
// generation nothing is downloaded or built: under reconcileStrategy
// ChartVersion a new artifact comes with a new chart version (a Git
// commit that changes a template but not the version only moves
// observedSourceArtifactRevision, as in Flux); under Revision (a
// GitRepository source; a HelmRepository's chart version is its revision)
// the version becomes <version>+<12 characters of the commit>, a new
// artifact per source revision. Dependencies that Chart.lock (or
// Chart.yaml) lists and charts/ lacks are added: file:// paths loaded
// by the worker from the same source (and completed the same way, never
// outside it), and repository URLs pulled here, as archive bytes that are
// never loaded here, from the HelmRepository of the namespace whose URL
// is theirs, with its credentials, at the locked version or the newest
// matching the range — nothing else is contacted; their archives together
// are at most --helm-chart-max-extracted-size bytes. Then a second worker
// request loads everything, adds the pulled dependencies, merges
// spec.valuesFiles in order over values.yaml (maps key by key, as helm
// -f) into the packaged values.yaml and packages the chart with the SDK's
// chartutil.Save after sorting its files and dependencies and fixing every
// time, so the same chart always has the same bytes and digest. Failures
// set FetchFailed (ChartPullFailed, AuthenticationFailed, InvalidSpec) or
// BuildFailed (ChartPackageFailed; LimitExceeded for a chart worker
// stopped at its memory, time or file-size limit), keep the last
// artifact, and are retried with backoff.
//
// artifact stores helmchart/<ns>/<name>/<chart>-<version>-<sha256>.tgz
// (revision the chart version) when the digest or version changed, with
// NewArtifact, and records observedChartName,
// observedSourceArtifactRevision and observedValuesFiles.
//
// # OCIRepository
//
// The GitRepository's steps, with the pull in a step of its own after
// verify (ocirepository_controller.go, ocirepository_verify.go,
// internal/oci, docs/design/oci-artifacts.md):
//
//  1. storage re-verifies the artifact.
//  2. source reads the Secrets (a .dockerconfigjson, certSecretRef's
//     certificates, proxySecretRef's proxy: connection.go) and resolves
//     spec.ref (digest, then semver with semverFilter,
//     then tag, latest by default) to a manifest digest; nothing is new
//     when the verified artifact of this generation has that revision
//     (with spec.verify, also SourceVerified=True for this generation).
//  3. verify (only with spec.verify): the digest must carry a cosign
//     signature by a public key (.pub) of spec.verify.secretRef over a
//     payload naming it, or a notation signature its trustpolicy.json
//     accepts, chaining to its certificates (internal/oci, bounded). SourceVerified True, or
//     False with VerificationError or InvalidArtifactSignature, both
//     retried with backoff; a refused revision is not even pulled.
//  4. layer pulls the layer spec.layerSelector picks, at most
//     --oci-max-layer-size bytes, and extracts it with pkg/artifact's
//     checks (at most --oci-max-extracted-size).
//  5. artifact stores ocirepository/<ns>/<name>/<manifest hex>.tar.gz,
//     the tree repacked (extract) or the layer as it is (copy), revision
//     <tag>@sha256:<hex> or sha256:<hex>.
//
// Failures of source and layer set FetchFailed with AuthenticationFailed,
// ProxyConfigError, InvalidSpec (stalled), OCIArtifactLayerOperationFailed (stalled, polled)
// or OCIArtifactPullFailed (retried); every failure keeps the last
// artifact.
//
// # Bucket
//
// The OCIRepository's steps without verify (bucket_controller.go,
// internal/bucket, docs/api/bucket.md):
//
//  1. storage re-verifies the artifact.
//  2. source reads the Secrets (accesskey and secretkey, certificates,
//     proxy) and lists the bucket within spec.timeout: spec.prefix, the
//     ignore rules, --bucket-max-objects, --bucket-max-object-size and
//     --bucket-max-size on the listed sizes; the revision is Flux's,
//     sha256 of the key and ETag index. Nothing is new when the verified
//     artifact of this generation has it.
//  3. download fetches the objects of a new revision into a scratch
//     folder, each checked against its ETag (If-Match) and listed size.
//  4. artifact packs the folder like a Git checkout into
//     bucket/<ns>/<name>/<revision hex>.tar.gz.
//
// Failures of source and download set FetchFailed with
// AuthenticationFailed, ProxyConfigError, LimitExceeded (stalled, polled),
// or BucketOperationFailed (retried; stalled and polled for an unsafe
// key); every failure keeps the last artifact.
//
// # ArtifactGenerator
//
// Steps sources, build and publish, on the same skeleton, finalizer and
// field manager. sources reads each source's artifact, which must be in
// this storage (an ExternalArtifact another program serves is refused:
// nothing is downloaded), and stops when the sources, the generation and
// every published ExternalArtifact are as the inventory recorded. build
// extracts the sources with pkg/artifact's checks and limits, with
// spec.pathPattern expands spec.artifacts once per matching folder of its
// source (artifactgenerator_pattern.go: captures put into names and copy
// paths, at most MaxGeneratedArtifacts, ValidationFailed or LimitExceeded
// stalled), carries out
// the copy operations (internal/compose: no "..", no absolute paths, no
// symlink out of a source, bounded files and bytes) into one tree per
// artifact, and packs each as externalartifact/<ns>/<name>/<content
// hash>.tar.gz. publish server-side-applies each ExternalArtifact (owned
// by the generator, labelled with its UID, the pattern's captures and
// spec.commonMetadata's labels and annotations) and its status (artifact,
// Ready), deletes those dropped from the spec with their files, and
// records the inventory. Any failure leaves the published ones as they
// were. A source's new artifact or readiness (a field index and a watch
// per source kind) and a change to an owned ExternalArtifact reconcile
// the generator at once; it has no interval.
//
// # Events
//
// Kubernetes Events and stream events (pkg/events) with reasons NewArtifact
// (info, with the revision and the digest and url in metadata),
// ArtifactRebuilt (info), and on every failed attempt an error event with
// Ready's reason (AuthenticationFailed, ReferenceNotFound, InvalidSpec,
// RepositoryTooLarge, InsecureConnectionsDisallowed, GitOperationFailed,
// StorageOperationFailed, and spec.verify's VerificationError,
// InvalidVerificationMode, InvalidGitObject, InvalidTagSignature,
// InvalidCommitSignature): a retry is the same news, which
// notification-controller alerts once per --rate-limit-interval.
// These and the condition reasons are constants of api/source/v1 and
// api/meta, listed in the Reasons table of docs/api/gitrepository.md. The
// Helm kinds record the same NewArtifact and ArtifactRebuilt events and
// their failures' reasons (docs/api/helmrepository.md and helmchart.md).
//
// # Metrics
//
// Registered in controller-runtime's metrics registry, labels namespace and
// name but for the duration, one histogram over every object of the kind:
//
//	plumb_source_reconcile_duration_seconds  histogram of reconcile durations
//	plumb_source_step_duration_seconds       histogram per step of the reconcile (label step)
//	plumb_source_ready                       Ready: 1 True, 0 False, -1 Unknown
//	plumb_source_suspended                   1 while spec.suspend is true
//	plumb_source_artifact_size_bytes         size of the current artifact
//	plumb_source_fetches_total               fetches (clones) done
//
// and the same set, without the counter, as plumb_source_helmrepository_*
// and plumb_source_helmchart_* for the Helm kinds, and with a
// pulls_total counter as plumb_source_ocirepository_*, and a
// fetches_total counter as plumb_source_bucket_*; and Flux's
// gotk_reconcile_duration_seconds, gotk_reconcile_condition and
// gotk_suspend_status for the kinds (pkg/metrics).
package controller
