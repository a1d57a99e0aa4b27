package main

// fluxTools is the page's section on the status fields Flux's tools read,
// after the count of fields: which tool reads what, checked against the flux CLI's
// source (fluxcd/flux2, cmd/flux and internal/build, as of August 2026).
// It is written by hand, as the header is; the table below it is made
// from the CRDs.
const fluxTools = `## Status that Flux's tools read

Where a Flux tool reads a status field, Plumb writes it under Flux's
name and in Flux's shape. The tools checked are the flux CLI's commands,
in its source; Flux's web UIs (Weave GitOps, Capacitor) were not checked.
The flux CLI asks the API server for Flux's groups, so it does not list
Plumb's objects as it is: what this promises is that a tool or script
that reads a Flux object's status reads Plumb's once it asks for Plumb's
group.

| tool | reads | in Plumb |
|---|---|---|
| ` + "`flux get kustomizations`" + ` | the ` + "`Ready`" + ` condition's status and message, ` + "`lastAppliedRevision`" + ` | the same |
| ` + "`flux get helmreleases`" + ` | the ` + "`Ready`" + ` condition, ` + "`history[0].chartVersion`" + `, else ` + "`lastAttemptedRevision`" + ` | the same |
| ` + "`flux reconcile`" + ` | sets ` + "`reconcile.fluxcd.io/requestedAt`" + `, waits for ` + "`lastHandledReconcileAt`" + ` to equal it, then for ` + "`Ready`" + ` with its ` + "`observedGeneration`" + ` (or the object's) at the current generation | the same: Plumb's controllers take Flux's annotation as their own |
| ` + "`flux tree kustomization`" + ` | ` + "`inventory.entries[].id`" + `, split as ` + "`<namespace>_<name>_<group>_<kind>`" + ` (a colon of an RBAC name written ` + "`__`" + `), failing on an id that does not split; below a listed HelmRelease, its ` + "`storageNamespace`" + ` and newest ` + "`history`" + ` entry's ` + "`name`" + ` and ` + "`version`" + `, to read the release's Helm storage Secret | the inventory in Flux's shape (Plumb's earlier ` + "`{group, version, kind, namespace, name}`" + ` entries had no id); a HelmRelease's release Secret is Plumb's record in Helm's format, with the manifest of its objects that are not hooks (its own ` + "`inventory`" + ` lists them too) |
| ` + "`flux diff kustomization`" + ` | the live ` + "`inventory.entries[]`" + `, ` + "`id`" + ` and ` + "`v`" + `: what it lists that the build lacks is shown deleted | the same |
| ` + "`flux trace`" + ` | ` + "`Ready`" + `, ` + "`lastAppliedRevision`" + ` (Kustomization); ` + "`Ready`" + `, ` + "`lastAttemptedRevision`" + `, ` + "`helmChart`" + ` (HelmRelease); a source's ` + "`artifact.revision`" + ` | the same |
| ` + "`flux debug kustomization`" + `, ` + "`flux debug helmrelease`" + ` | ` + "`--show-status`" + `: the whole status; ` + "`--show-history`" + `: ` + "`history`" + ` | the same names; the fields Plumb does not write are below |
| ` + "`flux stats`" + ` | the ` + "`Ready`" + ` condition, ` + "`spec.suspend`" + `, a source's ` + "`artifact.size`" + ` | the same |
| ` + "`flux events`" + ` | the object's Kubernetes Events (` + "`involvedObject`" + `), no status | Plumb's controllers record Events |

No tool checked reads a Kustomization's ` + "`lastAppliedOriginRevision`" + ` or a
HelmRelease's ` + "`lastAttemptedValuesChecksum`" + `, which Plumb does not write,
nor a HelmRelease's failure counts or ` + "`lastAttemptedReleaseAction`" + `, which
Plumb writes (` + "`plumb get helmrelease`" + ` shows them).
`
