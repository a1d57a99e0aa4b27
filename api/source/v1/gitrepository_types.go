package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plumb.dev/api/meta"
)

// GitRepositoryKind is the kind name of GitRepository.
const GitRepositoryKind = "GitRepository"

// Condition types specific to GitRepository.
const (
	// FetchFailedCondition is True while the last fetch from the remote failed;
	// its message carries the Git error.
	FetchFailedCondition = "FetchFailed"
	// ArtifactInStorageCondition is True when the artifact in status is
	// present in storage and matches its digest.
	ArtifactInStorageCondition = "ArtifactInStorage"
)

// Condition and event reasons specific to GitRepository (the shared ones
// are in api/meta; docs/api/gitrepository.md lists them all).
const (
	GitOperationFailedReason     = "GitOperationFailed"
	AuthenticationFailedReason   = "AuthenticationFailed"
	ReferenceNotFoundReason      = "ReferenceNotFound"
	StorageOperationFailedReason = "StorageOperationFailed"
	// RepositoryTooLargeReason: fetching and checking out the revision
	// needs more disk than source-controller's --max-repository-size.
	RepositoryTooLargeReason = "RepositoryTooLarge"
	// NewArtifactReason (event): an artifact of a new revision was stored.
	NewArtifactReason = "NewArtifact"
	// ArtifactRebuiltReason (event): a stored artifact was missing or
	// changed on disk and was built again.
	ArtifactRebuiltReason = "ArtifactRebuilt"
)

// GitRepositorySpec says which repository and reference to fetch and how often.
// +kubebuilder:validation:XValidation:rule="!has(self.ref) || !has(self.ref.semver) || !has(self.ref.tag)",message="spec.ref.semver and spec.ref.tag are mutually exclusive"
type GitRepositorySpec struct {
	// URL of the Git repository: http://, https:// or ssh://.
	// +required
	// +kubebuilder:validation:Pattern="^(http|https|ssh)://.*$"
	// +kubebuilder:validation:XValidation:rule="self.matches('^(http|https|ssh)://.*$')",message="url must start with http://, https:// or ssh://"
	URL string `json:"url"`

	// SecretRef names a Secret in the same namespace with the credentials:
	// username and password, bearerToken, or identity and known_hosts for SSH.
	// +optional
	SecretRef *meta.LocalObjectReference `json:"secretRef,omitempty"`

	// Provider is how spec.secretRef authenticates, as in Flux: generic
	// (its username and password, bearerToken or SSH identity) or github
	// (a GitHub App: githubAppID, githubAppInstallationID,
	// githubAppPrivateKey and optional githubAppBaseURL, from which an
	// installation token is minted and used over HTTPS). Unset is generic.
	// +optional
	// +kubebuilder:validation:Enum=generic;github
	Provider string `json:"provider,omitempty"`

	// Interval between two fetches of the remote.
	// +required
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	Interval metav1.Duration `json:"interval"`

	// Timeout bounds every Git operation of one reconcile.
	// +optional
	// +kubebuilder:default="60s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m))+$"
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// Reference is the Git reference to check out; defaults to the master
	// branch when empty, like Flux.
	// +optional
	Reference *GitRepositoryRef `json:"ref,omitempty"`

	// Ignore holds ignore rules in gitignore syntax, applied on top of the
	// repository's .sourceignore when packing the artifact.
	// +optional
	Ignore *string `json:"ignore,omitempty"`

	// Suspend stops all reconciliation of this object while true.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// Verification makes source-controller check the OpenPGP or SSH
	// signature of the fetched commit and/or tag before an artifact is made of it.
	// +optional
	Verification *GitRepositoryVerification `json:"verify,omitempty"`

	// RecurseSubmodules also fetches and checks out the submodules of the
	// commit, recursively, into the artifact, as Flux does. Each goes
	// through the same address policy, size limit and spec.timeout as the
	// repository; spec.secretRef's credentials are sent only to
	// submodules on the same scheme, host and port as spec.url.
	// +optional
	RecurseSubmodules bool `json:"recurseSubmodules,omitempty"`

	// SparseCheckout lists directories of the repository (paths relative
	// to its root, "./" optional); only these are checked out and packed
	// into the artifact. Every directory must exist in the commit: a
	// missing one fails the fetch rather than packing an empty artifact.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="self.all(d, !d.startsWith('/') && d != '..' && !d.startsWith('../') && !d.contains('/../') && !d.endsWith('/..'))",message="spec.sparseCheckout holds directories relative to the repository root, without a leading / or .. elements"
	SparseCheckout []string `json:"sparseCheckout,omitempty"`

	// Include copies the artifact content of other GitRepositories of the
	// same namespace into this one's artifact.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	Include []GitRepositoryInclude `json:"include,omitempty"`

	// ProxySecretRef names a Secret in the same namespace with the HTTP(S)
	// proxy every fetch of an http:// or https:// URL goes through: key
	// address (the proxy URL, http://, https:// or socks5://), optional
	// username and password.
	// +optional
	ProxySecretRef *meta.LocalObjectReference `json:"proxySecretRef,omitempty"`
}

// GitRepositoryInclude copies (a folder of) another GitRepository's
// artifact into this one's, at ToPath.
// +kubebuilder:validation:XValidation:rule="!has(self.fromPath) || (!self.fromPath.startsWith('/') && self.fromPath != '..' && !self.fromPath.startsWith('../') && !self.fromPath.contains('/../') && !self.fromPath.endsWith('/..'))",message="include fromPath must be relative to the included artifact's root, without a leading / or .. elements"
// +kubebuilder:validation:XValidation:rule="!has(self.toPath) || (!self.toPath.startsWith('/') && self.toPath != '..' && !self.toPath.startsWith('../') && !self.toPath.contains('/../') && !self.toPath.endsWith('/..'))",message="include toPath must be relative to the artifact's root, without a leading / or .. elements"
type GitRepositoryInclude struct {
	// GitRepositoryRef names the GitRepository to include, in the same
	// namespace.
	// +required
	GitRepositoryRef meta.LocalObjectReference `json:"repository"`

	// FromPath is the folder of the included artifact to copy; its root
	// when empty.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	FromPath string `json:"fromPath,omitempty"`

	// ToPath is where the copy lands in this artifact, replacing what the
	// checkout has there; the included repository's name when empty.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	ToPath string `json:"toPath,omitempty"`
}

// GetFromPath returns the folder of the included artifact to copy ("" is
// its root).
func (in *GitRepositoryInclude) GetFromPath() string { return in.FromPath }

// GetToPath returns where the copy lands, defaulting to the included
// repository's name.
func (in *GitRepositoryInclude) GetToPath() string {
	if in.ToPath == "" {
		return in.GitRepositoryRef.Name
	}
	return in.ToPath
}

// IncludeUnavailableCondition is True while an included GitRepository is
// missing or has no artifact yet; its reason says which.
const IncludeUnavailableCondition = "IncludeUnavailable"

// Reasons of spec.include and spec.proxySecretRef.
const (
	// IncludeNotFoundReason: an included GitRepository does not exist.
	IncludeNotFoundReason = "IncludeNotFound"
	// NoIncludedArtifactReason: an included GitRepository has no artifact
	// yet.
	NoIncludedArtifactReason = "NoIncludedArtifact"
	// IncludeFailedReason: an included artifact could not be copied (its
	// fromPath is missing, it fails its digest, it passes the size limits,
	// or the include graph has a cycle).
	IncludeFailedReason = "IncludeFailed"
	// ProxyConfigErrorReason: the Secret of spec.proxySecretRef is missing
	// or has no valid address.
	ProxyConfigErrorReason = "ProxyConfigError"
)

// Values of spec.provider.
const (
	GitProviderGeneric = "generic"
	GitProviderGitHub  = "github"
)

// GitRepositoryRef chooses what to check out. The most specific field wins:
// commit, then name, then semver, then tag, then branch.
type GitRepositoryRef struct {
	// Branch to check out; defaults to master.
	// +optional
	Branch string `json:"branch,omitempty"`

	// Tag to check out.
	// +optional
	Tag string `json:"tag,omitempty"`

	// SemVer range; the highest matching tag is checked out.
	// +optional
	SemVer string `json:"semver,omitempty"`

	// Name of any reference, e.g. refs/heads/main, refs/tags/v1 or
	// refs/pull/42/head; it must start with refs/.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="self.startsWith('refs/') && !self.contains('..') && !self.contains(' ') && !self.endsWith('/') && !self.endsWith('.lock')",message="spec.ref.name must be a full Git reference name starting with refs/ (e.g. refs/heads/main, refs/pull/42/head)"
	Name string `json:"name,omitempty"`

	// Commit SHA-1 to check out; with Branch, the commit must be on it.
	// +optional
	// +kubebuilder:validation:Pattern="^[a-f0-9]{40}$"
	Commit string `json:"commit,omitempty"`
}

// Signature verification (spec.verify): which Git objects must carry a
// valid signature by a trusted key before the revision becomes an
// artifact. Flux's field, modes and reasons.

// GitVerificationMode names the Git objects whose signatures are checked.
type GitVerificationMode string

const (
	// ModeGitHEAD: the commit checked out (the artifact's commit).
	ModeGitHEAD GitVerificationMode = "HEAD"
	// ModeGitTag: the annotated tag that spec.ref names.
	ModeGitTag GitVerificationMode = "Tag"
	// ModeGitTagAndHEAD: both the tag and the commit it points to.
	ModeGitTagAndHEAD GitVerificationMode = "TagAndHEAD"
	// modeGitLegacyHEAD is Flux's older spelling of HEAD, accepted so that
	// manifests written for it port unchanged.
	modeGitLegacyHEAD GitVerificationMode = "head"
)

// GitRepositoryVerification says what to verify and with which keys.
type GitRepositoryVerification struct {
	// Mode: HEAD verifies the checked-out commit, Tag the annotated tag
	// that spec.ref names (a tag, a semver range or a refs/tags/ name),
	// TagAndHEAD both; "head" is an old spelling of HEAD.
	// +optional
	// +kubebuilder:default:=HEAD
	// +kubebuilder:validation:Enum=head;HEAD;Tag;TagAndHEAD
	Mode GitVerificationMode `json:"mode,omitempty"`

	// SecretRef names a Secret in the same namespace whose data values are
	// armored OpenPGP public keys (key rings), or, under keys ending in
	// ".sshpub", SSH public keys in authorized_keys format; a signature by
	// any of them is trusted.
	// +required
	SecretRef meta.LocalObjectReference `json:"secretRef"`
}

// VerifyHEAD reports whether the checked-out commit must be signed.
func (v *GitRepositoryVerification) VerifyHEAD() bool {
	return v.Mode == "" || v.Mode == ModeGitHEAD || v.Mode == modeGitLegacyHEAD || v.Mode == ModeGitTagAndHEAD
}

// VerifyTag reports whether the tag spec.ref names must be signed.
func (v *GitRepositoryVerification) VerifyTag() bool {
	return v.Mode == ModeGitTag || v.Mode == ModeGitTagAndHEAD
}

// SourceVerifiedCondition is True when the signatures that spec.verify
// asks for were checked on the revision of the artifact, False (with a
// reason below) when the fetched revision was refused.
const SourceVerifiedCondition = "SourceVerified"

// Reasons of SourceVerified=False, also Ready's and the event's.
const (
	// VerificationErrorReason: the Secret of spec.verify is missing,
	// unreadable, too large, or holds no usable public key.
	VerificationErrorReason = "VerificationError"
	// InvalidVerificationModeReason: mode Tag or TagAndHEAD with a
	// spec.ref that is not a tag (stalled until the spec changes).
	InvalidVerificationModeReason = "InvalidVerificationMode"
	// InvalidGitObjectReason: the tag to verify is unsigned or lightweight.
	InvalidGitObjectReason = "InvalidGitObject"
	// InvalidTagSignatureReason: the tag's signature is not valid by any
	// trusted key.
	InvalidTagSignatureReason = "InvalidTagSignature"
	// InvalidCommitSignatureReason: the commit is unsigned or its signature
	// is not valid by any trusted key.
	InvalidCommitSignatureReason = "InvalidCommitSignature"
)

// GitRepositoryStatus is what source-controller observed and produced.
type GitRepositoryStatus struct {
	// ObservedGeneration is the generation of the spec last reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Ready, Reconciling, Stalled, FetchFailed, ArtifactInStorage,
	// SourceVerified (with spec.verify).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Artifact is the newest packed revision, served over HTTP.
	// +optional
	Artifact *meta.Artifact `json:"artifact,omitempty"`

	// IncludedArtifacts are the artifacts of spec.include copied into
	// status.artifact, in the order of spec.include.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	IncludedArtifacts []*meta.Artifact `json:"includedArtifacts,omitempty"`

	// ObservedIgnore is spec.ignore as applied to status.artifact.
	// +optional
	ObservedIgnore *string `json:"observedIgnore,omitempty"`

	// ObservedInclude is spec.include as applied to status.artifact.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	ObservedInclude []GitRepositoryInclude `json:"observedInclude,omitempty"`

	// ObservedRecurseSubmodules is spec.recurseSubmodules as applied to
	// the artifact.
	// +optional
	ObservedRecurseSubmodules bool `json:"observedRecurseSubmodules,omitempty"`

	// ObservedSparseCheckout is spec.sparseCheckout as applied to
	// status.artifact.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	ObservedSparseCheckout []string `json:"observedSparseCheckout,omitempty"`

	meta.ReconcileRequestStatus `json:",inline"`
}

// GitRepository keeps a packed, content-addressed copy of a Git reference.
// +genclient
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=gitrepo
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=`.spec.url`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
// +kubebuilder:printcolumn:name="Revision",type=string,JSONPath=`.status.artifact.revision`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type GitRepository struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   GitRepositorySpec   `json:"spec,omitempty"`
	Status GitRepositoryStatus `json:"status,omitempty"`
}

// GitRepositoryList is a list of GitRepository.
// +kubebuilder:object:root=true
type GitRepositoryList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []GitRepository `json:"items"`
}

// GetConditions returns the status conditions.
func (in *GitRepository) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions replaces the status conditions.
func (in *GitRepository) SetConditions(c []metav1.Condition) { in.Status.Conditions = c }

// GetTimeout returns the bound for Git operations, 60s when unset.
func (in *GitRepository) GetTimeout() metav1.Duration {
	if in.Spec.Timeout == nil {
		return metav1.Duration{Duration: 60_000_000_000}
	}
	return *in.Spec.Timeout
}

// GetObservedGeneration returns status.observedGeneration.
func (in *GitRepository) GetObservedGeneration() int64 { return in.Status.ObservedGeneration }

// SetObservedGeneration sets status.observedGeneration.
func (in *GitRepository) SetObservedGeneration(g int64) { in.Status.ObservedGeneration = g }

// GetLastHandledReconcileRequest returns the requestedAt value last acted on.
func (in *GitRepository) GetLastHandledReconcileRequest() string {
	return in.Status.GetLastHandledReconcileRequest()
}

// SetLastHandledReconcileRequest sets status.lastHandledReconcileAt.
func (in *GitRepository) SetLastHandledReconcileRequest(token string) {
	in.Status.SetLastHandledReconcileRequest(token)
}
