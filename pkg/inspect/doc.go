// Package inspect is how `plumb` and the UI look at what sync-controller
// applied, written once so that the terminal and the browser say the same:
//
//   - Applied views a Kustomization or a HelmRelease as one thing: its
//     inventory, drift, rendered artifact, sync progress, ignore rules,
//     prune and drift policy, and how sync-controller stamps its objects
//     (Prepare) and redacts the values that came from Secrets
//     (SecretRedactor).
//   - ArtifactClient and FetchRendered download the rendered artifact
//     render-controller serves, with the caller's identity when the URL is
//     an in-cluster Service (through the API server's service proxy),
//     digest-checked and size-bounded (MaxArtifactSize).
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
