// Package inspect is how `plumb` and the UI look at what sync-controller
// applied, written once so that the terminal and the browser say the same:
//
//   - Applied views a Kustomization or a HelmRelease as one thing: its
//     inventory, drift, rendered artifact, sync progress, ignore rules,
//     prune and drift policy, and how sync-controller stamps its objects
//     (Prepare) and redacts the values that came from Secrets
//     (SecretRedactor).
//   - NewArtifactFetcher and FetchRendered download the rendered artifact
//     render-controller serves, and nothing else: the URL in a status is
//     anyone's who may write it, so only a render file of the configured
//     render-controller Service is asked for (through the API server's
//     service proxy, with the caller's identity), or of a render-controller
//     on this machine when the caller allows it; no redirect is followed,
//     and causes can be kept out of the error (the UI). Digest-checked,
//     size-bounded (MaxArtifactSize) and two at a time in the process.
//   - ReadLive reads an inventory's live objects with a list per kind and
//     namespace, a few requests at a time: a tree of thousands of objects
//     costs tens of requests, and an identity that may get but not list
//     falls back to single reads, never to more privileges.
//   - BuildTree turns that into a tree: health (pkg/health) and a short
//     reason per object, the ReplicaSets, Pods and Jobs a workload owns
//     nested by controller ownerReferences, waves from the render, and the
//     hooks of the newest sync (found by the names pkg/plan gives them for
//     plan.SyncID of status.sync) with their outcome.
//   - Compare diffs one prepared object with the cluster through the
//     dry-run apply sync-controller makes (pkg/drift).
//
// Every function takes the client to read with; nothing here holds an
// identity of its own.
package inspect
