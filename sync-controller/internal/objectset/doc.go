// Package objectset is sync-controller's reconciler of ObjectSets
// (set.plumb.dev/v1): a Go text/template of Plumb objects rendered once
// per element of the set's generators, whose objects are applied,
// owned by the set and pruned when their element goes away.
//
// A reconcile is five steps on the pkg/reconcile skeleton:
//
//   - generate: every generator's elements (generators.go, gitfiles.go).
//     A list's elements as written; a git generator's folders or files of
//     its GitRepository's artifact, downloaded and checked against its
//     digest with pkg/fetch and read in memory within bounds (entries,
//     file size); a clusters generator's kubeconfig Secrets; a
//     pullRequests generator's open pull requests of a GitHub, GitLab or
//     Gitea repository (pullrequests.go, listed by package pullrequest
//     within its bounds and address policy, the token read from a Secret
//     of the set's namespace); a matrix's product and a merge's overlay
//     of two of those. More than
//     MaxElements elements in all is an error. Ready=False
//     (GeneratorFailed, PullRequestListFailed; Stalled, InvalidSpec, for
//     a sourceRef to another namespace under --no-cross-namespace-refs,
//     a pull request filter that does not compile or a token over plain
//     HTTP).
//   - render: the template once per element, with pkg/textbudget's
//     functions, output bound and timeout (the budget of an Alert's
//     message), then the YAML documents it gave, each bounded in nodes
//     after alias expansion (pkg/yamlsize), at most MaxDocuments per
//     element. Ready=False (TemplateFailed).
//   - admit: every object must be in the set's namespace, of a kind the
//     set may write (Plumb's namespaced kinds and ConfigMaps), not given
//     twice, and under --no-cross-namespace-refs name no other namespace
//     anywhere in it (a sourceRef's, a dependsOn's, a targetNamespace).
//     Stalled (ObjectRefused) until the spec or the input changes.
//   - apply: the prune guard first (a render that would prune all, or more
//     than --max-prune-percent, of the inventory is held until the
//     plumb.dev/confirm-prune annotation names its digest), then each
//     object by server-side apply as plumb-sync-objectset, acting as the
//     set's ServiceAccount, with an owner reference to the set (the
//     garbage collector deletes them with it) and the labels
//     set.plumb.dev/name and set.plumb.dev/namespace. Ready=False
//     (ApplyFailed, PruneGuarded).
//   - prune: the objects of the last inventory that the render no longer
//     gives, still labelled as this set's, are deleted. Ready=False
//     (PruneFailed).
//
// Nothing is pruned unless every generator, every element's render and
// every object's admission succeeded: a generator that fails (a missing
// artifact, an unreadable file, a Git host's error answer) keeps the
// objects that run. A set with pullRequests generators comes back after
// the shortest of spec.interval and their requeueAfterSeconds, and a
// Receiver naming it brings it back at a pull request event. Events name
// the objects created for new elements (ObjectsCreated) and those pruned
// (ObjectsPruned).
//
// Watches bring a set back when its spec changes or a reconcile is
// requested, when the GitRepository a git generator reads changes (a new
// artifact), and when a Secret in its namespace changes while it has a
// clusters generator (metadata only: the Secrets' data is read uncached,
// and only when a set needs it), and when another writer deletes one of
// its objects or changes it (children.go: metadata informers on the
// objects with the set's labels, of each kind a set has applied; a write
// is foreign when a managedFields entry of the object, not of its status,
// other than plumb-sync-objectset's changed). The apply then restores it
// and an ObjectsRestored event names it. The set's own prunes are
// expected and wake nothing; a suspended or deleted set restores
// nothing. A kind the controller may not list or may not watch (its
// RBAC) is not watched: Ready's message names it until it can be, with
// one DriftUnwatched warning, and its objects are restored only at the
// interval.
package objectset
