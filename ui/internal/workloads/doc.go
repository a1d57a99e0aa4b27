// Package workloads serves what the UI does with the workloads and Pods
// in a Kustomization's or HelmRelease's tree (docs/design/ui.md,
// "Workloads and Pods"):
//
//	GET  /api/objects/{kind}/{namespace}/{name}/pod?id=/Pod/ns/name
//	GET  /api/objects/{kind}/{namespace}/{name}/logs?id=/Pod/ns/name&container=&previous=&tail=&follow=
//	POST /api/objects/{kind}/{namespace}/{name}/resources/{action}   {"id": "apps/Deployment/ns/web", "replicas": 3}
//
// Every call is made with the signed-in user's own client (package
// access), so the API server decides: a user without pods/log, the scale
// subresource, patch or delete gets its 403, passed through. The object
// acted on must be in the application's tree — its inventory, or for a
// Pod owned by a workload of it or one of its hooks (pkg/podlogs) — so a
// page acts only on what it shows.
//
// Logs are pkg/podlogs' bounded reads (the tail, MaxBytes per request),
// sent as chunked text/plain a line at a time; a follow also ends after
// MaxFollow, when its session ends, and a session may hold MaxFollows of
// them at once (429 beyond). Actions are those of kubectl: restart sets
// the pod template's kubectl.kubernetes.io/restartedAt annotation (as
// `kubectl rollout restart`), scale writes the scale subresource, delete
// deletes a Pod, suspend and resume set a CronJob's spec.suspend. Each
// answer carries a note of what sync-controller will make of the change
// (Note): it applies only the fields Git sets, so a restart stays, and a
// scale is reverted when Git sets spec.replicas and no ignore rule covers
// it.
package workloads
