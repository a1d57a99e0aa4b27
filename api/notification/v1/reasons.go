package v1

// Condition and event reasons of Alerts, Providers and Receivers (the
// shared ones are in api/meta; docs/api/alert.md, provider.md and
// receiver.md list them all).
const (
	// SecretNotReadyReason: the referenced Secret or one of its keys is
	// missing (or a Receiver's token is too short).
	SecretNotReadyReason = "SecretNotReady"
	// ProviderNotReadyReason: an Alert's Provider is missing or not Ready.
	ProviderNotReadyReason = "ProviderNotReady"
	// CrossNamespaceRefReason: a reference into another namespace while
	// notification-controller runs with --no-cross-namespace-refs.
	CrossNamespaceRefReason = "CrossNamespaceRef"
	// AddressRefusedReason: a Provider's address is an IP address the
	// delivery address policy refuses.
	AddressRefusedReason = "AddressRefused"
	// DeliveryFailedReason (event, on an Alert): a Provider did not take
	// an event after all retries.
	DeliveryFailedReason = "DeliveryFailed"
	// InvalidTemplateReason: an Alert's spec.summary or
	// spec.messageTemplate is not a template notification-controller runs.
	InvalidTemplateReason = "InvalidTemplate"
	// ReconcileRequestedReason (event, on a Receiver): a verified webhook
	// call annotated the Receiver's resources.
	ReconcileRequestedReason = "ReconcileRequested"
)
