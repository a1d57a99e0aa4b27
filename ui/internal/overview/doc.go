// Package overview serves GET /api/overview and GET /api/namespaces: every
// object of the kinds source-, render-, sync- and image-controller
// reconcile (ui/internal/kinds.All) as one row each (Ready, revision,
// health summary, drift state, last sync), filtered, counted and paged.
// An ImagePolicy's revision is its latest image, an
// ImageUpdateAutomation's its last pushed commit (row_image.go).
//
// The rows come from memory, not from a list per request: a Store is fed
// by informers that watch the overview's kinds (kinds.All) with the UI's own identity and
// turns each object into its Row once, when it changes. What a user may
// see is then decided per kind and namespace with a `list`
// SelfSubjectAccessReview made as that user (access.Session.MayDo, cached
// a minute), so a user who may not list a namespace's Kustomizations sees
// none of its rows — the same answer the API server would give them — and
// a page over 1,000 objects costs a filter over memory and a few cached
// reviews (BenchmarkOverview).
//
// Every change the informers see is also handed to the Store's OnChange
// function, which the server uses to push it to open pages (package live).
package overview
