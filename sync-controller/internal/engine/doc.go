// Package engine applies a set of desired objects to the cluster the way
// sync-controller needs it, with as few API requests as correctness allows.
//
// # What it remembers
//
// For every object it applied, the engine keeps a record: the hash of the
// desired object and a fingerprint of the object's managedFields (who wrote
// which fields, when) as the apply left them. The same hash is stamped on the
// object as the annotation plumb.dev/applied-hash, so the memory survives a
// restart.
//
// # What it watches
//
// Managed objects carry the label kustomize.plumb.dev/name (a HelmRelease's,
// helm.plumb.dev/name); the engine runs a metadata-only informer per kind
// that appears in a set, filtered on its owner kind's label (a Watcher
// serves one owner kind: NewWatcherFor; sync-controller runs an engine and
// a watcher per kind). The informers answer "does this object exist and who
// wrote it last" without a request, and their events are the drift trigger:
// a write by any manager other than plumb-sync (status writes aside), or a
// deletion, enqueues the owning Kustomization or HelmRelease at once.
//
// # How an object is checked
//
// An object annotated plumb.dev/ssa: IfNotPresent is only created, with a
// create (the cache may not see one that exists without our labels), and
// never changed once it exists; an engine acting as a ServiceAccount reads
// it as the ServiceAccount first instead of trusting the controller's cache. For the others:
//
//   - Not in the informer cache: it does not exist (or is not ours yet); it
//     is applied straight away, no dry-run.
//   - Same desired hash and the same managedFields fingerprint as the record
//     (or, after a restart, the applied-hash annotation matches and
//     plumb-sync's write is the newest): unchanged, no request at all.
//   - Otherwise: GET the live object, server-side dry-run apply the desired
//     one, and compare the two with pkg/diff (pkg/drift's Compare, which
//     `plumb diff` calls too). Only a real difference is applied; the diff
//     is what drift reports show.
//
// A write asks for the API server's answer as metadata only
// (PartialObjectMetadata, in protobuf) when the object's health is told by
// its existence — a ConfigMap, a Secret, a headless Service (answer.go) —
// and whole otherwise: a Deployment's health is read from its answer.
//
// A drift found by the dry-run names its makers (Result.Managers: the
// foreign managedFields entries that own a drifted field; and per field,
// Result.FieldManagers; both pkg/drift's ForeignManagers). With
// Options.Guard set, the caller may hold a correction back: Wait skips an
// object before any request, Revert leaves a drift found in place
// (Result.Held); sync-controller uses it to back off from a fight.
//
// Applies of one kind group run concurrently (bounded); groups run in kind
// order so Namespaces and CRDs exist before the objects that need them.
//
// Prune deletes only objects with the owner's labels, and never one
// annotated plumb.dev/prune: disabled or helm.sh/resource-policy: keep.
//
// Objects are named by pkg/object's ID everywhere (results, errors, the
// engine's memory); actions are pkg/diff's, ownership and the field manager
// pkg/manage's. The engine re-exports none of them.
package engine
