// Command image measures the sample's image automation under `make run`'s
// environment (e2e/localenv with its registry, the pod simulator and the
// five controllers as processes; `make bench-image`): from a new tag in
// the registry to the Deployment carrying it, through the registry
// webhook, the scan, the ImagePolicy, the automation's signed commit in
// the Git server, the GitRepository's fetch, the render and the apply.
//
// Three ways, one after the other, on one environment:
//
//   - webhook: -n new tags (1.0.1, 1.0.2, …) one after another, each
//     written to the registry as CI does (the manifest of 1.0.0 under the
//     new tag) and announced by the registry's push webhook to the
//     Receiver "registry" (Docker Hub's format). Each round is timed from
//     before the tag is written to the Deployment's new image, with the
//     stages between as watches see them: the ImagePolicy's latestRef,
//     the automation's lastPushCommit, the Kustomization's
//     lastAppliedRevision.
//   - interval: one tag with no webhook, the ImageRepository's
//     spec.interval set to -scan-interval and the tag written just after
//     a scan: what a tag waits without the webhook (a whole interval at
//     worst) before the same chain.
//   - floor: the chain's work done by the bench itself while Plumb's
//     objects are suspended (its controllers idle): the tag written, the
//     registry's tags listed and the highest semver picked, the change
//     committed and pushed to the Git server with the git binary, and the
//     Deployment server-side-applied with the new image.
//
// It prints a table (p50, p90, max per stage) with the load average; one
// run is recorded in docs/bench/image.md.
package main
