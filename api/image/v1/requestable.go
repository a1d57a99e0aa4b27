package v1

// ImageRepository and ImagePolicy honour the reconcile.plumb.dev/requestedAt
// annotation (meta.Requestable): image-controller reconciles them at once
// when it changes — a registry webhook's Receiver sets it to scan now —
// and records the value it handled in status.lastHandledReconcileAt.

// GetLastHandledReconcileRequest returns status.lastHandledReconcileAt.
func (in *ImageRepository) GetLastHandledReconcileRequest() string {
	return in.Status.LastHandledReconcileAt
}

// SetLastHandledReconcileRequest sets status.lastHandledReconcileAt.
func (in *ImageRepository) SetLastHandledReconcileRequest(token string) {
	in.Status.LastHandledReconcileAt = token
}

// GetLastHandledReconcileRequest returns status.lastHandledReconcileAt.
func (in *ImagePolicy) GetLastHandledReconcileRequest() string {
	return in.Status.LastHandledReconcileAt
}

// SetLastHandledReconcileRequest sets status.lastHandledReconcileAt.
func (in *ImagePolicy) SetLastHandledReconcileRequest(token string) {
	in.Status.LastHandledReconcileAt = token
}
