// Package controller holds the reconcilers of render-controller: they turn
// a Kustomization and its source artifact, or a HelmRelease and its chart,
// into a rendered manifests artifact (one multi-document YAML,
// sha256-addressed) that sync-controller applies. They never touch the
// workloads in the cluster. The HelmRelease reconciler is described in its
// own section below; what is said of Kustomizations otherwise holds for
// both.
//
// # Reconcile
//
// A reconcile of a live, unsuspended Kustomization runs these steps in
// order, stopping at the first error:
//
//  1. source: read the GitRepository or OCIRepository of spec.sourceRef
//     (the Kustomization's namespace by default; sources.go lists the
//     kinds, all of them serve a tar.gz artifact in status.artifact). A
//     reference into another namespace is refused while
//     --no-cross-namespace-refs is set (Rendered=False, InvalidSpec, no
//     retry until the spec changes). While the source is missing or has no
//     artifact: Rendered=False, DependencyNotReady, requeue after
//     --requeue-dependency. Every source kind is watched, so a new artifact
//     digest or revision re-renders every Kustomization using it at once.
//  2. variables: resolve postBuild.substituteFrom (ConfigMaps and Secrets in
//     the Kustomization's namespace, in order, a later one winning; optional
//     ones may be missing) and postBuild.substitute (which wins). A missing
//     object is Rendered=False, SubstituteFailed.
//  3. decryption: with spec.decryption, read the Secret of its secretRef
//     (the Kustomization's namespace, as this controller, uncached) and
//     parse its .agekey (age identities) and .asc (armored OpenPGP private
//     keys) entries. A missing Secret, a key that does not parse or one
//     locked by a passphrase is Rendered=False, DecryptionFailed.
//  4. cache: the key is sha256 of the source artifact's digest, the
//     generation, the variables, the decryption keys and the options, and
//     with spec.plugin the versions its plugins announce (plugin.go:
//     pluginCacheKey), so an upgraded plugin renders again. When
//     the last successful render had that key and its file still verifies
//     in storage, the reconcile ends here: no download, no build, no status
//     write.
//  5. download: fetch status.artifact.url with retries and exponential
//     backoff (pkg/fetch, --download-attempts, on a transport of its own:
//     the process's default transport refuses everything), verify its
//     sha256 digest, then extract it with pkg/artifact into the source
//     folder of a fresh work folder (the archive is deleted after),
//     refusing absolute paths, "..", links leaving the root, hard links,
//     devices, FIFOs and archives over --max-artifact-size,
//     --max-extracted-size or --max-files. Any failure is Rendered=False,
//     ArtifactFailed, with the refusal in the message.
//  6. build: pkg/render in its sandbox (docs/design/render-sandbox.md), in
//     a render worker process (pkg/renderworker: --render-workers at once,
//     each with --render-worker-memory, killed at --render-timeout):
//     kustomize reads only the work folder, never the network, no plugins;
//     then substitution and validation (an undefined ${var} without default
//     is "" as in Flux, or an error with --strict-substitution). The build
//     is bounded by --max-render-input, --max-yaml-nodes (aliases counted
//     expanded), --max-yaml-documents and --max-rendered-size too. A
//     LimitExceeded holds the same inputs back for a backoff up to the
//     interval, with one event (limithold.go). With spec.decryption, SOPS-encrypted Secrets, generator inputs and
//     patches are decrypted in memory as kustomize reads them
//     (pkg/decrypt, docs/design/sops.md); nothing decrypted is written to
//     the work folder. Failure is Rendered=False with reason BuildFailed,
//     SubstituteFailed, ValidationFailed, RemoteResourceRefused (naming the
//     file and field), LimitExceeded (naming the limit and its flag) or
//     DecryptionFailed (naming the file and the keys it is encrypted for),
//     and a warning event with the message; decrypted values never appear
//     in it.
//     With spec.plugin the worker renders with that config-management
//     plugin instead of kustomize (plugin.go, pkg/renderplugin,
//     docs/design/plugins.md): this render's source tree alone goes to the
//     plugin's socket in --plugin-dir (without spec.plugin.name, the one
//     plugin whose discover rule matches), and its YAML comes back through the
//     same limits, patches, images, checks and printing. A plugin's failure
//     is BuildFailed with the end of its stderr, sanitised; past the
//     deadline or the output limit, LimitExceeded; the kustomize-only
//     fields beside spec.plugin, ValidationFailed.
//  7. store: write kustomization/<ns>/<name>/<sha256 hex>.yaml through
//     pkg/artifact's Storage (atomic, content-addressed, not synced to the
//     disk: internal/rendered's doc says why), served by this
//     controller's own artifact server; set status.renderedArtifact with
//     the source revision; keep the newest --artifact-retention-records
//     files, and those of the renders status.history names, which a
//     rollback (plumb rollback) applies again. The same bytes from the same revision keep the artifact as it
//     was, lastUpdateTime included.
//  8. announce: Rendered=True with the object count and revision, and a
//     Rendered event (on the stream only) for a new artifact or the same
//     one after a failure.
//
// Store and announce and the clean-up of a deleted object's render are the
// same for both kinds and live in internal/rendered; each reconciler
// passes in what is its own (the revision, the metadata, the message). The
// status write is the skeleton's, of the part of status each kind owns. The
// rest both reconcilers hold and do alike — the skeleton, the limit holds
// around a render, the worker pool, the download client, the counters —
// is renderKind (renderkind.go), which each embeds; what stays in
// kustomization_controller.go and helmrelease_controller.go is what they
// render from.
//
// Each reconciler builds its renderKind once, in SetupWithManager, before
// the manager can call Reconcile: the store, the skeleton, the worker pool
// (Renderer, or a pool of its own when nil) and the download client
// (HTTPClient, or one on a transport of its own when nil); the
// Kustomization reconciler its source cache too (SourceTrees, or a cache
// in TmpDir when nil). main sets the exported fields in a composite
// literal, so nothing is built in it, and nothing is built later: no
// reconcile sets anything up. A test that calls Reconcile without a
// manager builds the reconciler through setUpWithoutManager
// (export_test.go), which does what SetupWithManager does.
//
// The steps run in pkg/reconcile's skeleton as a partial controller: it
// summarizes the outcome into Rendered alone (sync-controller owns Ready,
// Reconciling, Stalled and observedGeneration), logs failures at error
// level and records their events, and writes status once.
//
// After a failure the reconcile comes back after spec.retryInterval (or a
// new source artifact comes first); after success, after spec.interval with
// jitter, to pick up changed substituteFrom data.
//
// A failure never removes or replaces status.renderedArtifact: the last
// good render stays in status and in storage, and the Rendered condition's
// message says which revision is still served. sync-controller therefore
// never sees an empty or partial set because of a bad commit.
//
// # Status ownership
//
// Two controllers write a Kustomization's status. This one owns only
// status.renderedArtifact and the Rendered condition (whose
// observedGeneration says which generation it judged) and server-side
// applies exactly those, as field manager plumb-render, on the status
// subresource. The conditions list is a map keyed by type, so
// sync-controller's Ready, Reconciling, Stalled, Healthy and Drifted and its
// status.observedGeneration are never touched. Status is written only when
// the owned part changed.
//
// # Deletion
//
// render-controller puts no finalizer on a Kustomization: adding one is a
// write of the Kustomization (a CRD, about twice a ConfigMap apply for the
// API server) at creation and another at deletion, and what it guarded is
// done without it. A Kustomization's storage folder
// (kustomization/<ns>/<name>) is removed (forget, with what is kept in
// memory for it) when:
//
//   - a reconcile finds it gone: the delete event, once nothing holds the
//     object any more. While sync-controller's finalizer holds a deleted
//     Kustomization (the delete hooks are read from the artifact, then the
//     prune), the reconcile does nothing: the artifact stays served until
//     the object has left the API server. A Kustomization sync-controller
//     never got to has no finalizer and goes at once, and so does its
//     folder;
//   - it is held by another finalizer once sync-controller's is gone
//     (syncFinalizerReleased brings it back): nothing reads the render
//     any more;
//   - it leaves this shard (--watch-label-selector): the informer drops it
//     as if deleted, the reconcile finds nothing; the new shard renders
//     into its own storage;
//   - it is replaced: deleted and created again under the same name before
//     a reconcile saw it gone. The first reconcile of an object whose UID
//     is not the one last reconciled under that name forgets the old one's
//     first, so the new one is rendered and announced afresh;
//   - it was deleted (or left the shard) while render-controller was not
//     running: at start, once the Kustomization cache has synced, a sweep
//     (sweep.go) lists the storage's Kustomization folders
//     (artifact.Storage.List, at most 100,000 entries read; the rest waits
//     for the next start, and the log says so) and queues each one whose
//     Kustomization is not in the cache. Its reconcile finds nothing and
//     forgets it: going through the work queue, a removal never races the
//     render of a new object of that name. One info line names the count
//     and the first 20. The sweep starts with the controller, so on the
//     leader alone, the one replica that writes the storage (a standby
//     sharing its folder never removes what the leader just wrote). The
//     cache holds this shard's Kustomizations only, which is right: the
//     storage is this shard's.
//
// Kustomizations that an older render-controller gave its finalizer
// (render.plumb.dev/finalizer) keep it while they live and are released
// when they are deleted, after the clean-up above, as before: the skeleton
// still hands a deleted object to finalize (Finalizer.Retired), which
// releases the finalizer (Finalizer.Release, under the field manager that
// added it). It is not removed from live objects at upgrade: that would be
// a write of every Kustomization at once, in the storm of the first
// reconciles after the upgrade, to save one write each at their deletion;
// and it holds nothing back while render-controller runs.
//
// # Events
//
// Stream events (pkg/events, JetStream subject
// plumb.events.kustomization.<namespace>.<name>): Rendered (info, with the
// source revision, and the object count, digest and url in metadata) for
// each new rendered artifact and on recovery from a failure, on the stream
// only — the status says the same to a person, and a first sync's one
// Kubernetes Event is sync-controller's Applied (docs/design/events.md);
// BuildFailed, SubstituteFailed, ValidationFailed, RemoteResourceRefused,
// LimitExceeded, ArtifactFailed and InvalidSpec (error), as Warning
// Kubernetes Events too, on every failed attempt, the same news each time
// for notification-controller to alert once per --rate-limit-interval
// (pkg/reconcile). Messages never hold
// values from Secrets. The reasons are constants of api/kustomize/v1 and
// api/meta, listed in the Reasons table of docs/api/kustomization.md.
//
// # HelmRelease
//
// A reconcile of a live, unsuspended HelmRelease runs these steps in order
// (helmrelease_controller.go), in the same partial skeleton, owning
// status.renderedArtifact, status.helmChart and Rendered:
//
//  1. chart: with spec.chart, server-side apply (field manager
//     plumb-render) the HelmChart <namespace>-<name> in the sourceRef's
//     namespace: the template's spec, its interval or else the
//     HelmRelease's, chart.metadata's labels and annotations, the
//     HelmRelease's shard key sharding.plumb.dev/key unless chart.metadata
//     names one (so its shard's source-controller builds it), and the
//     labels helm.plumb.dev/name and helm.plumb.dev/namespace, which mark
//     it as this HelmRelease's (an owner reference cannot cross
//     namespaces). A HelmChart of that name without them is someone else's:
//     Rendered=False, HelmChartFailed, nothing changed. With spec.chartRef,
//     the source named: a HelmChart, or an OCIRepository or
//     ExternalArtifact whose artifact is the chart itself (chartsource.go).
//     status.helmChart records "<ns>/<name>" of a HelmChart, and is empty
//     for the other two, as in Flux; a HelmChart this HelmRelease created
//     and no longer renders (chart replaced by chartRef, or moved) is
//     deleted. Another namespace is refused under --no-cross-namespace-refs
//     (InvalidSpec, stalled).
//  2. source: wait (DependencyNotReady, "waiting for <kind> ns/name: …")
//     until a HelmChart's observedGeneration is its generation, it is Ready
//     and has an artifact; an OCIRepository needs its generation observed,
//     not Stalled, and an artifact (Ready or not: a failed poll keeps the
//     last chart, as Flux renders it); an ExternalArtifact an artifact.
//     All three kinds are watched (an index per kind maps them to their
//     HelmReleases).
//  3. values: pkg/helmvalues merges valuesFrom in order, then spec.values,
//     within --max-values-size and --max-yaml-nodes (ValuesFailed or
//     LimitExceeded, never quoting a Secret). The ConfigMaps of valuesFrom
//     are watched, their metadata only (an index maps them to the
//     HelmReleases), so a change re-renders. Secrets are read by name and
//     never listed or watched (that would need the right to read them
//     all): a changed Secret is read at the next reconcile (spec.interval,
//     requestedAt). The release is installing while status.history has no
//     deployed entry: .Release.IsInstall and install.crds, else
//     upgrade.crds — for a render that happens; the move to deployed
//     alone renders nothing (see 5). .Release.Revision is the history's
//     newest version plus one (nextRevision), and the render's metadata
//     says which action it was made for (release-action).
//  4. capabilities: the server version and every served group version and
//     kind from discovery (Capabilities), kept for --capabilities-ttl and
//     dropped when a CustomResourceDefinition changes (a metadata watch),
//     so .Capabilities.APIVersions.Has sees CRDs installed in the cluster.
//  5. cache: the inputs digest hashes the chart artifact's digest (and
//     revision, from an OCIRepository or ExternalArtifact), the
//     config digest, the release name and namespace, both CRD policies,
//     the post-renderers and commonMetadata — not the capabilities, the
//     install state, the generation or the limits. The stored render's digest is in
//     status.renderedArtifact.metadata (inputs-digest), so an equal digest
//     with an intact artifact ends the reconcile, after a restart too: an
//     install render is not made again as an upgrade render (with
//     upgrade.crds, .Release.IsUpgrade) just because the install was
//     deployed, which sync-controller would release again. One
//     exception: an install's render outgrown by a release adopted from
//     Helm's storage since (a deployed history entry of no render of
//     Plumb's) is made again, as the upgrade (helmadopt.go); the update
//     that adds the entry is watched (installStateChanged).
//  6. download: pkg/fetch, digest-checked, within --max-chart-size.
//  7. render: pkg/helmrender in a render worker (as build), with
//     spec.commonMetadata on every templated object, within
//     --render-timeout and the render, chart and values limits; a failure
//     is Rendered=False with its reason (BuildFailed naming the template,
//     ValidationFailed, LimitExceeded; a LimitExceeded held back as a
//     Kustomization's).
//  8. store: helmrelease/<ns>/<name>/<sha256 hex>.yaml, revision the chart
//     version, metadata chart-name, chart-version, config-digest and
//     inputs-digest. From an OCIRepository, or an ExternalArtifact whose
//     revision holds a digest, the chart version carries 12 hex digits of
//     the digest as build metadata (6.6.1+0cc9a8446c95), as Flux's
//     revision does, so content pushed again under one tag is a new
//     release, and the whole digest is in the metadata (oci-digest) for
//     sync-controller's lastAttemptedRevisionDigest and history; an OCI tag that is another semver version than the chart's
//     is ArtifactFailed;
//     and the render's release record (what Helm's storage
//     holds that only the chart knows, for sync-controller to write into
//     it) in helmrelease-beside/<ns>/<name>/, its URL and digest in the
//     metadata too (release-record, release-record-digest), or why there
//     is none (release-record-omitted) (helmrecord.go).
//  9. announce: Rendered=True and a Rendered event, as for Kustomizations.
//
// A failure is retried after spec.interval (HelmRelease has no
// retryInterval) and keeps the last good render; when the inputs come back
// to those of the stored render, it is served again without rendering.
// HelmReleases keep render-controller's finalizer
// (render.plumb.dev/finalizer): it deletes the HelmChart this HelmRelease
// owns, which nothing else would after a deletion while render-controller
// was down, and its rendered artifacts when it is deleted; a chartRef's
// HelmChart is left alone. dependsOn is sync-controller's.
//
// # The process
//
// main calls render.LockDownProcess before anything else: the default HTTP
// transport and git refuse every request, so a remote reference that got
// past the sandbox's check still reaches nothing. The artifact server has
// read, write and idle timeouts and a connection cap (--storage-*).
//
// # Metrics
//
// Registered in controller-runtime's metrics registry; one series per
// Kustomization, its Rendered condition (labels namespace and name), and
// the rest over every Kustomization:
//
//	plumb_render_reconcile_duration_seconds  histogram of reconcile durations
//	plumb_render_step_duration_seconds       histogram per step of the reconcile (label step)
//	plumb_render_rendered                    Rendered: 1 True, 0 False, -1 Unknown
//	plumb_render_builds_total                kustomize builds run
//
// and the same set for HelmReleases under plumb_render_helmrelease_
// (reconcile_duration_seconds, step_duration_seconds, rendered,
// renders_total). Whether an object is suspended and the size of its
// rendered artifact are sync-controller's series of the same object
// (gotk_suspend_status,
// plumb_sync_artifact_size_bytes), and Flux's gotk_* series of the two
// kinds are sync-controller's too, which owns their Ready
// (docs/design/metrics.md).
package controller
