// Package controller holds image-controller's three reconcilers, each a
// list of named steps on pkg/reconcile's skeleton (whose outcome table
// says what every failure does to Ready, Reconciling and Stalled, and
// when the object comes back).
//
// # ImageRepository
//
// Reconciled on creation, on a spec change, on a new
// reconcile.plumb.dev/requestedAt (plumb reconcile, a registry webhook's
// Receiver) and every spec.interval. Steps:
//
//   - suspend: Ready=False (Suspended) while spec.suspend; the last scan
//     stays.
//   - image: status.canonicalImageName; Stalled, ImageURLInvalid, for a
//     name with a tag or digest or no name at all.
//   - exclusions: spec.exclusionList compiled (Flux's default, cosign's
//     .sig tags, when unset); Stalled, InvalidSpec.
//   - credentials: spec.secretRef (.dockerconfigjson) and
//     spec.certSecretRef (ca.crt, tls.crt, tls.key); AuthenticationFailed,
//     retried.
//   - scan: the tag list within spec.timeout, bounded by --max-tags,
//     --max-tag-pages and --max-response-size and fenced by
//     --allowed-private-networks (internal/registry says how); the tags
//     left after the exclusions go to Tags, and a summary to
//     status.lastScanResult (revision, tagCount, scanTime, the ten
//     latestTags) and observedExclusionList. AuthenticationFailed,
//     ReadOperationFailed (retried), TagLimitExceeded (Stalled, polled
//     every interval). A failed scan keeps the last one's tags and status.
//
// # Where the tags are kept
//
// Flux keeps every scanned tag in a database on a volume. image-controller
// keeps only each repository's last scan, in memory (Tags), bounded by
// --max-tags per repository (10,000 tags of at most 128 bytes: about 1.3
// MB for the largest repository); the status holds the ten latest. A
// restart costs one scan of every repository, which the first reconcile
// of each does anyway, and its policies wait (DependencyNotReady,
// --requeue-dependency) until their repository's scan is in; their status
// keeps the latest image meanwhile, so no automation sees a change.
//
// # ImagePolicy
//
// Reconciled on creation, a spec change, a requestedAt, every change of
// its ImageRepository (a scan), and, with digestReflectionPolicy Always,
// every spec.interval (10m by default). Steps:
//
//   - suspend: Ready=False (Suspended) while spec.suspend.
//   - repository: the ImageRepository and its last scan. Stalled,
//     AccessDenied, for another namespace under --no-cross-namespace-refs;
//     DependencyNotReady while it is missing or not scanned yet.
//   - policy: spec.policy and spec.filterTags compiled (internal/policy);
//     Stalled, InvalidPolicy.
//   - latest: the tag the policy chooses; NoMatchingTag when none passes,
//     until the next scan; InvalidPolicy for a numerical policy over a
//     tag that is no number.
//   - digest: status.latestRef with the digest digestReflectionPolicy
//     asks for (a HEAD request with the repository's credentials and
//     bounds); observedPreviousRef keeps the ref it replaced, and an info
//     event (Succeeded) tells the change. A failed read keeps the
//     previous latestRef.
//
// # ImageUpdateAutomation
//
// Reconciled on creation, a spec change, a requestedAt, every
// spec.interval, when a policy its policySelector matches gets a new
// latestRef (or new labels), and when its GitRepository's spec or
// artifact revision changes. Steps:
//
//   - suspend: Ready=False (Suspended) while spec.suspend; nothing is
//     cloned.
//   - source: the GitRepository, its secretRef and proxySecretRef (the
//     automation writes with its GitRepository's credentials, none of its
//     own), and the ref to check out (git.checkout.ref, else the
//     GitRepository's). Stalled, AccessDenied, for another namespace
//     under --no-cross-namespace-refs; DependencyNotReady while it is
//     missing; InvalidSourceConfiguration for a ref by semver or name or
//     a GitHub App provider; AuthenticationFailed for a missing Secret.
//   - policies: the ImagePolicies of the namespace the selector matches,
//     Ready with a latestRef; Stalled, InvalidPolicySelector.
//   - update: plumb.dev/pkg/imageupdate.Run (clone, setters under
//     update.path, commit as the author, signed with signingKey (an
//     OpenPGP key, or an SSH key with type ssh), push without force, a
//     lost race run again on the new head), over http(s):// or ssh://,
//     within the
//     GitRepository's timeout, every connection through
//     plumb.dev/pkg/gitreach with Connection.Addresses
//     (--allowed-private-networks), as source-controller's fetches. After
//     a push: status.lastPushCommit and lastPushTime, an info event
//     (Succeeded) with the commit, its message and the images, and the
//     GitRepository's requestedAt annotation, so source-controller fetches
//     the commit at once. AuthenticationFailed for refused credentials or
//     an SSH host key not in known_hosts; GitOperationFailed and
//     UpdateFailed (retried); InvalidSourceConfiguration (Stalled) for
//     what only the spec fixes.
//
// No kind has a finalizer: what they make lives in this process (Tags),
// in their own status and in Git, so a deleted repository's tags and the
// kinds' metric series are dropped when the reconcile finds the object
// gone.
package controller
