package v1

// Condition and event reasons of ImageRepositories and ImagePolicies (the
// shared ones are in api/meta; docs/api/imagerepository.md and
// imagepolicy.md list them all). The values are Flux's where Flux has the
// reason. A Secret missing or refused is source-controller's
// AuthenticationFailed (sourcev1.AuthenticationFailedReason), one reason
// for one failure across kinds.
const (
	// ImageURLInvalidReason: spec.image is not an image repository's
	// name; Stalled until it changes.
	ImageURLInvalidReason = "ImageURLInvalid"
	// ReadOperationFailedReason: the registry could not be read (network,
	// timeout, an answer over a bound, an address the policy refuses).
	ReadOperationFailedReason = "ReadOperationFailed"
	// TagLimitExceededReason: the registry lists more tags (or pages of
	// them) than image-controller scans; the scan is refused whole.
	TagLimitExceededReason = "TagLimitExceeded"
	// InvalidPolicyReason (Flux's "InvalidPolicy"): spec.policy or
	// spec.filterTags cannot be used (a bad range or pattern, no policy);
	// Stalled until the spec changes.
	InvalidPolicyReason = "InvalidPolicy"
	// NoMatchingTagReason: no tag of the repository passes the filter and
	// the policy; polled on the repository's next scan.
	NoMatchingTagReason = "NoMatchingTag"
	// AccessDeniedReason (Flux's): spec.imageRepositoryRef names another
	// namespace while image-controller runs with
	// --no-cross-namespace-refs; Stalled until the spec changes.
	AccessDeniedReason = "AccessDenied"
)

// Condition and event reasons of ImageUpdateAutomations (Flux's values;
// docs/api/imageupdateautomation.md lists them with the shared ones). A
// failed clone, fetch or push is source-controller's GitOperationFailed
// (sourcev1.GitOperationFailedReason), one reason for one failure.
const (
	// InvalidSourceConfigReason (Flux's "InvalidSourceConfiguration"):
	// spec.sourceRef or spec.git cannot be used (another kind, a
	// checkout with no branch to push to, a bad message template or
	// signing key); Stalled until the spec changes.
	InvalidSourceConfigReason = "InvalidSourceConfiguration"
	// InvalidPolicySelectorReason: spec.policySelector is no valid label
	// selector; Stalled until the spec changes.
	InvalidPolicySelectorReason = "InvalidPolicySelector"
	// UpdateFailedReason: the files under update.path could not be
	// updated (update.path leaves the repository, a limit of the walk).
	UpdateFailedReason = "UpdateFailed"
)
