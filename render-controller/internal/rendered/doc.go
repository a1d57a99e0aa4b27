// Package rendered is what render-controller does with a render once it is
// made, the same for every kind it renders (Kustomization, HelmRelease):
//
//   - store: write the manifests to <kind>/<ns>/<name>/<sha256 hex>.yaml
//     through pkg/artifact's Storage (atomic, content-addressed), unless
//     the object already serves the same bytes from the same revision, in
//     which case its artifact and lastUpdateTime are kept so its status
//     does not change; then keep the newest --artifact-retention-records
//     files, and those the kind asks to keep whatever their age (the
//     renders status.history names, which sync-controller's rollback
//     downloads again: Render.Keep) (Store.Store). A render that no longer verifies in storage is
//     made again (Store.Intact). render-controller's Storage is Rebuilt:
//     a render is not synced to the disk before it is served (an fsync
//     cost a worker 4–20 ms per render on a busy disk), since a file that
//     a crash of the machine left short fails that check and every
//     reader's, and is written again under the same name. The kernel
//     writes a file out within its writeback interval (30 s by default),
//     so the older renders a rollback downloads are on the disk as any
//     file is.
//   - announce: set Rendered=True and publish a Rendered event (on the
//     JetStream stream only, no Kubernetes Event: docs/design/events.md)
//     for a new artifact, or for the same one again after a failure,
//     never twice for one render (Store.Announce, Store.Reconciled).
//   - beside: a file that goes with a render (a HelmRelease's release
//     record), in a folder of its own so retention counts renders as
//     before (Store.StoreBeside).
//   - forget: when the object is gone, drop all of it: what was announced,
//     its metric series and its storage folders (Store.Forget).
//
// Why a package: the two reconcilers of internal/controller did each of
// these in their own copy, which drifted apart in small ways. What differs
// between the kinds is what they render from (a source tree and kustomize,
// or a chart and values) and what they record of it (the revision, the
// metadata, the message); that is passed in, the rest is here. The status
// write is pkg/reconcile's: each kind names the part of its status it owns
// (its OwnedStatus) and the skeleton applies it.
package rendered
