// Package actions serves the UI's writes on Plumb objects: POST
// /api/objects/{kind}/{namespace}/{name}/reconcile, /suspend, /resume and
// /sync (a manual sync of an object with syncPolicy Manual: sync.go) and
// /rollback.
// Each is one merge patch made with the user's own client (access.From),
// so the API server decides: a user without `patch` on the object gets its
// 403, passed through. Reconcile sets the same requestedAt annotation as
// `plumb reconcile` (pkg/reconcile.Request) — with withSource, on the
// object's source first (a Kustomization's GitRepository; a HelmRelease's
// HelmChart and the chart's own source); resume clears spec.suspend and
// requests a reconcile in the same patch, as `plumb resume` does (ending
// a rollback's hold first); rollback sets plumb.dev/rollback to the digest
// of an earlier entry of a Kustomization's or HelmRelease's
// status.history, as `plumb rollback` does (pkg/request.Rollback). None of
// them waits: the page sees the controller's progress through GET
// /api/live.
package actions
