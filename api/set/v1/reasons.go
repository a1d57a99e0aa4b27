package v1

// Condition and event reasons of ObjectSets (the shared ones are in
// api/meta, and a refused apply or prune is the Kustomization's
// ApplyFailed and PruneFailed, one reason for one failure;
// docs/api/objectset.md lists them all).
const (
	// GeneratorFailedReason: a generator could not give its elements (a
	// GitRepository without an artifact, an artifact that cannot be read,
	// a Secret list refused, more elements than the set allows). Nothing
	// is applied or pruned: the objects of the last evaluation stay.
	GeneratorFailedReason = "GeneratorFailed"
	// PullRequestListFailedReason: a pullRequests generator could not
	// list its repository's pull requests (the host's error answer, an
	// answer over a bound, a refused address, the token's Secret
	// missing). Retried; nothing is applied or pruned: the objects of the
	// pull requests last listed stay.
	PullRequestListFailedReason = "PullRequestListFailed"
	// TemplateFailedReason: the template could not be parsed or executed
	// for an element, or what it gave is no YAML of objects, or is over a
	// bound. Nothing is applied or pruned.
	TemplateFailedReason = "TemplateFailed"
	// ObjectRefusedReason: the template gave an object the set may not
	// write (another namespace, a kind outside the allowed ones, a
	// reference to another namespace under --no-cross-namespace-refs).
	// Nothing is applied or pruned; Stalled until the spec or the
	// generators' input changes.
	ObjectRefusedReason = "ObjectRefused"
	// ObjectsPrunedReason: the event of a reconcile that deleted the
	// objects of elements that went away; it names them.
	ObjectsPrunedReason = "ObjectsPruned"
	// ObjectsCreatedReason: the event of a reconcile that created objects
	// for new elements; it names them.
	ObjectsCreatedReason = "ObjectsCreated"
	// ObjectsRestoredReason: the event of a reconcile that applied again
	// the objects another writer deleted or changed (a field the set
	// sets); it names them and, for a change, the writers' field
	// managers.
	ObjectsRestoredReason = "ObjectsRestored"
	// DriftUnwatchedReason: the warning event of a reconcile that applied
	// objects of a kind sync-controller may not list, so cannot watch (its
	// RBAC): another writer's change to them is undone only at the next
	// interval. It names the kinds and the API server's refusal; Ready's
	// message says the same until the kind can be watched.
	DriftUnwatchedReason = "DriftUnwatched"
)
