// Package manage says what makes an object managed by a Kustomization or a
// HelmRelease, so that sync-controller and the plumb CLI prepare and write
// an object the same way before applying it (or dry-running it):
//
//   - the namespace: a namespaced object without one goes to the
//     Kustomization's namespace, a cluster-scoped one has none (Resolve);
//   - the ownership labels kustomize.plumb.dev/name and
//     kustomize.plumb.dev/namespace (helm.plumb.dev/name and
//     helm.plumb.dev/namespace for a HelmRelease: the keys differ, so a
//     Kustomization and a HelmRelease of one name in one namespace never
//     own each other's objects), which prune and the drift watch read
//     (Owner, Owner.Owns, OwnerOf);
//   - the annotation plumb.dev/applied-hash, the hash of the object as
//     prepared, which lets a restarted sync-controller know what it applied
//     without a dry-run (Stamp);
//   - the field manager plumb-sync of every write, taking over fields
//     another manager set (Apply).
//
// It is about ownership and writes only. Reading a rendered artifact into
// objects is pkg/object's (DecodeManifests); comparing with the cluster
// through a dry-run, and redacting Secret values in the report, is
// pkg/drift's.
package manage
