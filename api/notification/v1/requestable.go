package v1

// Provider, Alert and Receiver honour the reconcile.plumb.dev/requestedAt
// annotation (meta.Requestable): notification-controller reconciles them
// at once when it changes and records the value it handled in
// status.lastHandledReconcileAt, which `plumb reconcile` waits for.

// GetLastHandledReconcileRequest returns status.lastHandledReconcileAt.
func (in *Provider) GetLastHandledReconcileRequest() string {
	return in.Status.LastHandledReconcileAt
}

// SetLastHandledReconcileRequest sets status.lastHandledReconcileAt.
func (in *Provider) SetLastHandledReconcileRequest(token string) {
	in.Status.LastHandledReconcileAt = token
}

// GetLastHandledReconcileRequest returns status.lastHandledReconcileAt.
func (in *Alert) GetLastHandledReconcileRequest() string {
	return in.Status.LastHandledReconcileAt
}

// SetLastHandledReconcileRequest sets status.lastHandledReconcileAt.
func (in *Alert) SetLastHandledReconcileRequest(token string) {
	in.Status.LastHandledReconcileAt = token
}

// GetLastHandledReconcileRequest returns status.lastHandledReconcileAt.
func (in *Receiver) GetLastHandledReconcileRequest() string {
	return in.Status.LastHandledReconcileAt
}

// SetLastHandledReconcileRequest sets status.lastHandledReconcileAt.
func (in *Receiver) SetLastHandledReconcileRequest(token string) {
	in.Status.LastHandledReconcileAt = token
}
