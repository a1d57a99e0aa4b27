package meta

// Annotations every Plumb controller honours.
const (
	// ReconcileRequestAnnotation asks for an immediate reconcile whenever its
	// value changes; receivers and the plumb CLI set it to a timestamp.
	ReconcileRequestAnnotation = "reconcile.plumb.dev/requestedAt"
)

// Condition types shared by all kinds. Ready, Reconciling and Stalled follow
// kstatus, so generic tools read Plumb objects the way they read Deployments.
const (
	ReadyCondition       = "Ready"
	ReconcilingCondition = "Reconciling"
	StalledCondition     = "Stalled"
)

// Condition reasons shared by all kinds.
const (
	SucceededReason   = "Succeeded"
	FailedReason      = "Failed"
	ProgressingReason = "Progressing"
	// ProgressingWithRetryReason: Reconciling stays True after a failure
	// that will be retried.
	ProgressingWithRetryReason = "ProgressingWithRetry"
	SuspendedReason            = "Suspended"
	DependencyNotReadyReason   = "DependencyNotReady"
	InvalidSpecReason          = "InvalidSpec"
	ArtifactFailedReason       = "ArtifactFailed"
)
