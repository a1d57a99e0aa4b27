package meta

// Annotations every Plumb controller honours.
const (
	// ReconcileRequestAnnotation asks for an immediate reconcile whenever its
	// value changes; receivers and the plumb CLI set it to a timestamp.
	ReconcileRequestAnnotation = "reconcile.plumb.dev/requestedAt"
	// FluxReconcileRequestAnnotation is Flux's: accepted beside Plumb's,
	// so that Flux's command line and receivers in a mixed cluster
	// trigger Plumb's kinds too (pkg/request).
	FluxReconcileRequestAnnotation = "reconcile.fluxcd.io/requestedAt"
)

// Labels every Plumb controller honours.
const (
	// ShardKeyLabel names the shard an object belongs to: the instances of
	// a controller started with --watch-label-selector on it (e.g.
	// "sharding.plumb.dev/key in (shard1)") each reconcile their own
	// share; the main instance takes "!sharding.plumb.dev/key", the
	// objects without it. See docs/design/sharding.md.
	ShardKeyLabel = "sharding.plumb.dev/key"
)

// Condition types shared by all kinds. Ready, Reconciling and Stalled follow
// kstatus, so generic tools read Plumb objects the way they read Deployments.
const (
	ReadyCondition       = "Ready"
	ReconcilingCondition = "Reconciling"
	StalledCondition     = "Stalled"
)

// Condition reasons shared by several kinds. Every reason a Plumb
// controller sets or records is a constant here or in its API group's
// package, and is listed in the Reasons table of its kind's page in
// docs/api (api/reasons_test.go checks both ways).
const (
	// SucceededReason: Ready (or another positive condition) is True.
	SucceededReason = "Succeeded"
	// FailedReason: an unexpected error, retried with backoff.
	FailedReason = "Failed"
	// ProgressingReason: Reconciling is True while a new generation is
	// worked on; Ready is Unknown meanwhile.
	ProgressingReason = "Progressing"
	// ProgressingWithRetryReason: Reconciling stays True after a failure
	// that will be retried (Flux's reason).
	ProgressingWithRetryReason = "ProgressingWithRetry"
	// SuspendedReason: spec.suspend is true.
	SuspendedReason = "Suspended"
	// LimitExceededReason: a render or a chart's packaging passed a limit
	// of the worker it ran in or of the input (size, YAML nodes or
	// documents, output size, time, the worker's memory), which stopped
	// it; what was served before stays.
	LimitExceededReason = "LimitExceeded"
	// DependencyNotReadyReason: something the object needs first (a
	// source's artifact, a dependsOn Kustomization) is not ready yet.
	DependencyNotReadyReason = "DependencyNotReady"
	// RetriesExceededReason (Flux's reason): Stalled is True because a
	// failure was retried as often as the object's retry limit allows; a
	// change or a reconcile request starts over.
	RetriesExceededReason = "RetriesExceeded"
	// InvalidCELExpressionReason (Flux's reason): Ready=False and Stalled
	// while a CEL expression of the spec (dependsOn[].readyExpr) does not
	// compile; the message names the entry, the expression and the error.
	InvalidCELExpressionReason = "InvalidCELExpression"
	// InvalidSpecReason: the spec cannot work; Stalled until it changes.
	InvalidSpecReason = "InvalidSpec"
	// ArtifactFailedReason: an artifact could not be downloaded, verified
	// or stored.
	ArtifactFailedReason = "ArtifactFailed"
	// InsecureConnectionsDisallowedReason (Flux's reason): credentials
	// would travel over plain http:// (a GitRepository's https:// URL
	// redirected to http://, a Provider with credentials and an http://
	// address without spec.insecure).
	InsecureConnectionsDisallowedReason = "InsecureConnectionsDisallowed"
)
