// Package controller holds the reconciler of source-controller: it turns a
// GitRepository into a verified tar.gz artifact served over HTTP.
//
// # Reconcile
//
// A reconcile of a live, unsuspended object adds the finalizer
// source.plumb.dev/finalizer, reports Reconciling=True first when the
// generation is new, then runs these steps in order, stopping at the first
// error:
//
//  1. storage: re-verify the current artifact's sha256 (ArtifactInStorage);
//     a missing or tampered file is rebuilt by the next steps.
//  2. source: list the remote's references (ls-remote) and resolve
//     spec.ref; when the verified artifact of this generation already has
//     that revision, nothing is fetched; otherwise check the commit out,
//     shallow where the ref allows (FetchFailed on error). The checkout may
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
//  3. artifact: pack the checkout into gitrepository/<ns>/<name>/<commit>.tar.gz
//     (pkg/artifact), set status.artifact, emit NewArtifact for a new
//     revision, keep the newest --artifact-retention-records files.
//
// A panic in a step (they read a remote repository, untrusted input) fails
// that step like an error (pkg/panics), so the summary below reports it.
// Every failure message names spec.url without its user info
// (user:password@), in conditions, events and logs alike: internal/git's
// errors pass message.StripUserInfo.
//
// pkg/reconcile's skeleton then summarises: Ready=True and
// observedGeneration on success (requeue after spec.interval with jitter);
// Stalled=True and Ready=False for a spec that cannot work (an invalid
// semver range), handed to controller-runtime as a TerminalError, so no
// retry until the spec changes; Stalled=True and Ready=False
// (RepositoryTooLarge) for a revision over the size limit, polled every
// spec.interval, as only a new commit (or a higher limit) helps and
// retrying with backoff would download the same bytes again and again;
// the same, reason InsecureConnectionsDisallowed, for an https:// remote
// that redirects to http://; Ready=False, Reconciling=True
// (ProgressingWithRetry) and controller-runtime's backoff for anything
// else (a GitRepository has no retryInterval). Failures are logged at
// error level. The previous artifact stays in status and in storage
// through failures. Status is server-side-applied with the field manager
// plumb-source, once per reconcile. lastHandledReconcileAt records the
// value of reconcile.plumb.dev/requestedAt, whose change triggers a
// reconcile at once.
// Deleting the object removes its storage folder, then the finalizer.
//
// # Events
//
// Kubernetes Events and stream events (pkg/events) with reasons NewArtifact
// (info, with the revision and the digest and url in metadata),
// ArtifactRebuilt (info), and on every failed attempt an error event with
// Ready's reason (AuthenticationFailed, ReferenceNotFound, InvalidSpec,
// RepositoryTooLarge, InsecureConnectionsDisallowed, GitOperationFailed,
// StorageOperationFailed): a retry is the same news, which
// notification-controller alerts once per --rate-limit-interval.
// These and the condition reasons are constants of api/source/v1 and
// api/meta, listed in the Reasons table of docs/api/gitrepository.md.
//
// # Metrics
//
// Registered in controller-runtime's metrics registry, labels namespace and
// name:
//
//	plumb_source_reconcile_duration_seconds  histogram of reconcile durations
//	plumb_source_ready                       Ready: 1 True, 0 False, -1 Unknown
//	plumb_source_suspended                   1 while spec.suspend is true
//	plumb_source_artifact_size_bytes         size of the current artifact
//	plumb_source_fetches_total               fetches (clones) done
package controller
