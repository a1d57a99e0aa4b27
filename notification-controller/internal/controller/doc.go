// Package controller holds the reconcilers of notification-controller:
// Provider (its Secret and address resolve), Alert (its event sources stay
// in bounds, its expressions and templates compile and its Provider is
// ready) and Receiver (its resources stay in bounds, its token — and for
// gcr the email and audience — resolves and is long enough; it writes
// status.webhookPath). Each is a short ordered list of
// steps run by pkg/reconcile's skeleton; each step's doc comment names the
// conditions it sets. Status is server-side-applied whole under the field
// manager "plumb-notification" when it changed; conditions follow kstatus
// (Ready, Reconciling, Stalled). A stalled object is handed to
// controller-runtime as a TerminalError; a failure retries with backoff;
// an object waiting for its Secret or Provider is looked at again after
// --requeue-dependency (at most --secret-refresh-interval).
//
// Each of the three is reconciled at once when its
// reconcile.plumb.dev/requestedAt annotation changes (plumb reconcile
// receiver|alert|alert-provider, plumb resume), and records the value it
// handled in status.lastHandledReconcileAt. A Receiver's webhook requests
// no reconcile of them, only of the kinds other controllers reconcile.
//
// Secrets are read by name only: notification-controller may get a Secret
// but neither list nor watch them, so the one internet-facing component
// cannot enumerate every tenant's credentials. A Provider with a Secret,
// and every Receiver, is therefore reconciled again every
// --secret-refresh-interval (and at once when it changes or is annotated
// with reconcile.plumb.dev/requestedAt); a rotated token or address takes
// effect then. A Provider or Receiver whose Secret is missing, or lacks a
// key, is Ready=False (SecretNotReady) with a message naming the Secret and
// the key, never a value; so is a Receiver whose token is shorter than 32
// bytes, and its webhook path is removed.
//
// Under --no-cross-namespace-refs a Receiver resource or an Alert event
// source in another namespace ("*" included) stalls the object with reason
// CrossNamespaceRef ("cross-namespace references are not allowed: …"). An
// Alert's providerRef and every secretRef have no namespace field at all.
//
// A Provider whose credentials would travel over plain http:// without
// spec.insecure stalls with InsecureConnectionsDisallowed; one whose address
// is an IP literal the delivery address policy refuses (link-local, cloud
// metadata, loopback unless allowed) stalls with AddressRefused; a
// spec.timeout above --max-provider-timeout is cut, and Ready's message says
// so. An Alert whose expressions do not compile is Stalled (InvalidSpec);
// one whose spec.summary or spec.messageTemplate does not parse, or breaks a
// bound of package alerttext, is Stalled (InvalidTemplate).
//
// Every reason is a constant of api/notification/v1 or api/meta, listed in
// the Reasons tables of docs/api/alert.md, provider.md and receiver.md.
//
// # Metrics
//
// pkg/metrics' set per kind, labels namespace and name (the duration has
// none: one histogram over every object of the kind), recorded by the
// skeleton (the alert delivery metrics are internal/dispatch's):
//
//	plumb_notification_{provider,alert,receiver}_reconcile_duration_seconds  histogram
//	plumb_notification_{provider,alert,receiver}_step_duration_seconds{step} histogram per step
//	plumb_notification_{provider,alert,receiver}_ready                       Ready: 1 True, 0 False, -1 Unknown
//	plumb_notification_{provider,alert,receiver}_suspended                   1 while spec.suspend is true
//
// and Flux's gotk_reconcile_duration_seconds, gotk_reconcile_condition and
// gotk_suspend_status for the three kinds (pkg/metrics). The kinds have
// no finalizer: a deleted object's series are dropped when its reconcile
// finds it gone.
package controller
