// Package inspect serves the UI's object pages (docs/design/ui.md, "HTTP
// API"): one object of the overview's kinds with its source, conditions,
// sync and history, and for the two applied kinds the tree of what they
// applied; for image-controller's kinds (image.go) a policy's latest and
// previous image, its ImageRepository's last scan and the automations that
// select it (listed as the user, at most maxAutomations), an automation's
// last push; one applied object's live
// state, health, field-level diff against Git with the field manager of
// each changed field, and its Kubernetes Events; the ignore rule for a
// diff line; and the applied revisions with the diff between two renders.
//
// Every request is made with the identity of the user behind the HTTP
// request (ClientFunc), so the API server decides what the page shows:
// its errors pass through with their status (403 stays 403). Nothing here
// falls back to more privileges: a user who may not dry-run apply sees the
// diff as unavailable and why.
//
// The logic is pkg/inspect's, shared with the CLI (`plumb tree`, `plumb
// diff`): the applied view, the tree read by listing per kind and
// namespace, the comparison through sync-controller's dry-run apply
// (pkg/drift), and the download of the rendered artifact. This package
// turns it into JSON and keeps Secrets' values out of every response.
//
// Rendered artifacts come from Options.RenderController only (an artifact
// URL in a status is anyone's who may write it), and a failed download is
// one generic note on the page, its cause in the server's log: what
// answered a URL, and how, is no business of the browser's.
package inspect
